//! The options of the Redis string commands as the store takes them: what
//! SET does about an existing key and its expiry, and what GETEX does to
//! the expiry. Times are absolute (ms since the epoch): the frontend adds
//! the clock to EX/PX, so the store and its log never see a relative time.

/// SET's NX / XX.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SetCond {
    #[default]
    Always,
    /// Only when the key does not exist (NX, SETNX, MSETNX).
    Nx,
    /// Only when it exists (XX).
    Xx,
}

/// What a SET does to the key's expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SetExpiry {
    /// The key has none afterwards (a plain SET).
    #[default]
    Clear,
    /// Whatever the key had stays (KEEPTTL).
    Keep,
    /// It expires then (EX/PX/EXAT/PXAT made absolute; a time already past
    /// is kept as it is, so the key is gone on its next access).
    At(i64),
}

/// SET's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SetOpts {
    pub cond: SetCond,
    pub expiry: SetExpiry,
    /// GET: answer the old value; a key of another type is refused
    /// before anything changes.
    pub get: bool,
}

/// What a SET did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SetDone {
    /// The value was set (NX/XX allowed it).
    pub set: bool,
    /// The old value, with [`SetOpts::get`] (`None`: no such key).
    pub old: Option<Vec<u8>>,
}

/// What GETEX does to the expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GetExpiry {
    /// Nothing (no option).
    #[default]
    Keep,
    /// PERSIST.
    Persist,
    /// EX/PX/EXAT/PXAT made absolute: a time not in the future deletes
    /// the key after it is read.
    At(i64),
}

/// Redis's `proto-max-bulk-len` default: no string may grow past it.
pub const MAX_STRING_LEN: u64 = 512 * 1024 * 1024;
