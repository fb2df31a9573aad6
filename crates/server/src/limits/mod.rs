//! The resource limits every frontend shares, applied where connections
//! are accepted and bytes are read, never per protocol: the connection
//! limit ([`clients`]), idle and head time limits ([`deadline`]), and the
//! memory budget's upkeep ([`memory`]; the budget itself, which operations
//! check, is [`podium_core::memory`]).

pub mod clients;
pub mod deadline;
pub mod memory;

pub use clients::{ClientGate, Place};
pub use deadline::{Busy, BusyGuard, Deadlines, Timeouts};

/// What a listener applies to each connection it accepts.
#[derive(Debug, Clone)]
pub struct ConnLimits {
    pub gate: std::sync::Arc<ClientGate>,
    pub timeouts: Timeouts,
}

/// The refusal text of a full protocol, in podium's words; the Redis
/// protocol sends Redis's own instead.
pub const TOO_MANY_CLIENTS: &str =
    "too many clients: this server's connection limit for the protocol (maxclients) is \
     reached; retry later";
