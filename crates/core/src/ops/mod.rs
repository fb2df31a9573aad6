//! The product's operations, one home each: the typed request a frontend
//! builds from its wire format, the checks of its arguments that do not
//! depend on the data, the key scope it needs ([`Operation::op`]) and its
//! execution against storage ([`Operation::run`], one [`Backend`] method).
//! HTTP, MessagePack-RPC and the CLI only translate their wire to one of
//! these and the result back; the Redis protocol, whose commands are not
//! the product's operations, reads the same scope table (`crate::op`).
//!
//! The files group operations by what they touch: `board` (create,
//! reconfigure whole or in part, delete, reset, merge/intersect), `submit` (scores in),
//! `import`, `remove`, `data`, `reads` (one member or one page), `range`
//! (ranges by rank or score), `search`, `export` and `events` (live
//! subscriptions).

use async_trait::async_trait;

use crate::backend::Backend;
use crate::error::ApiError;
use crate::op::Op;

pub mod board;
pub mod data;
pub mod events;
pub mod export;
pub mod import;
pub mod range;
pub mod reads;
pub mod remove;
pub mod search;
pub mod submit;

pub use board::{Combine, CreateBoard, DeleteBoard, PatchBoard, PutBoard, Reset};
pub use data::SetData;
pub use events::Subscribe;
pub use export::ExportChunk;
pub use range::{RangeBy, RangeByRank, RangeByScore};
pub use reads::{
    Around, BoardInfo, Count, GetEntry, ListBoards, Percentile, Rank, Ranks, ResortStatus,
    ScoreAtPercentile, Top,
};
pub use remove::{Remove, RemoveRange};
pub use search::Search;
pub use submit::{Submit, SubmitMany};

/// A typed request of one operation.
#[async_trait]
pub trait Operation: Send + Sync {
    /// What it answers.
    type Out: Send;

    /// Which operation it is: the scope table's row.
    fn op(&self) -> Op;

    /// Runs it against `be`.
    async fn run(&self, be: &dyn Backend) -> Result<Self::Out, ApiError>;
}

/// Implements [`Operation`] for requests that are one [`Backend`] method
/// of the same name.
macro_rules! operation {
    ($($req:ty => $op:ident, $method:ident -> $out:ty;)*) => {
        $(
            #[async_trait::async_trait]
            impl $crate::ops::Operation for $req {
                type Out = $out;

                fn op(&self) -> $crate::op::Op {
                    $crate::op::Op::$op
                }

                async fn run(
                    &self,
                    be: &dyn $crate::backend::Backend,
                ) -> Result<$out, $crate::error::ApiError> {
                    be.$method(self).await
                }
            }
        )*
    };
}
pub(crate) use operation;

/// Default and largest page sizes of page reads.
pub const DEFAULT_PAGE_SIZE: u64 = 25;
pub const MAX_PAGE_SIZE: u64 = 10_000;
/// Largest `range_by_*` / `ranks` answer in one call.
pub const MAX_RANGE: u64 = 1_000_000;

/// A page size as requested (`None`: the default), checked.
pub fn page_size(ps: Option<u64>) -> Result<u64, ApiError> {
    match ps.unwrap_or(DEFAULT_PAGE_SIZE) {
        0 => Err(ApiError::bad("page_size must be at least 1")),
        n if n > MAX_PAGE_SIZE => Err(ApiError::bad(format!(
            "page_size must be at most {MAX_PAGE_SIZE}"
        ))),
        n => Ok(n),
    }
}
