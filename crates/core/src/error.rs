//! The error every protocol reports: a stable machine-readable code, an
//! HTTP status, and a message for people (docs/spec.md §4:
//! `{"error": {"code": "...", "message": "..."}}`).

use podium_engine::Error as EngineError;

/// Stable error codes, shared by HTTP, MessagePack-RPC and the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    InvalidArgument,
    InvalidScore,
    InvalidMember,
    InvalidBoardName,
    InvalidData,
    InvalidConfig,
    MalformedRequest,
    PayloadTooLarge,
    /// An HTTP request URI longer than the server reads.
    UriTooLong,
    /// An HTTP request body in an encoding the server does not decode.
    UnsupportedMediaType,
    /// An HTTP request head (request line and headers) too large to read.
    HeadersTooLarge,
    BoardNotFound,
    MemberNotFound,
    NotFound,
    MethodNotAllowed,
    BoardExists,
    ReadOnly,
    /// A board update that would re-rank the board's members (a change of
    /// `order`, `ranking`, `tiebreak` or `sort`) sent without
    /// `confirm_rerank: true`.
    ConfirmRerankRequired,
    /// A key of another type (Redis's WRONGTYPE).
    WrongType,
    Unauthorized,
    Forbidden,
    /// A rate limit is used up (per API key, client address or member).
    RateLimited,
    StorageUnavailable,
    /// The memory budget (`--maxmemory`) is used up: writes and large
    /// requests are refused until memory is freed (Redis's OOM).
    OutOfMemory,
    /// A protocol's connection limit (`--maxclients`) is reached.
    TooManyClients,
    /// A request's head or body did not arrive within its time limit.
    RequestTimeout,
    /// The server is not serving yet (it is recovering its data or
    /// connecting to Redis) or any more (it is shutting down).
    NotReady,
    /// The storage engine does not offer this (yet).
    Unsupported,
    Internal,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidArgument => "invalid_argument",
            Code::InvalidScore => "invalid_score",
            Code::InvalidMember => "invalid_member",
            Code::InvalidBoardName => "invalid_board_name",
            Code::InvalidData => "invalid_data",
            Code::InvalidConfig => "invalid_config",
            Code::MalformedRequest => "malformed_request",
            Code::PayloadTooLarge => "payload_too_large",
            Code::UriTooLong => "uri_too_long",
            Code::UnsupportedMediaType => "unsupported_media_type",
            Code::HeadersTooLarge => "headers_too_large",
            Code::BoardNotFound => "board_not_found",
            Code::MemberNotFound => "member_not_found",
            Code::NotFound => "not_found",
            Code::MethodNotAllowed => "method_not_allowed",
            Code::BoardExists => "board_exists",
            Code::ReadOnly => "read_only",
            Code::ConfirmRerankRequired => "confirm_rerank_required",
            Code::WrongType => "wrong_type",
            Code::Unauthorized => "unauthorized",
            Code::Forbidden => "forbidden",
            Code::RateLimited => "rate_limited",
            Code::StorageUnavailable => "storage_unavailable",
            Code::OutOfMemory => "out_of_memory",
            Code::TooManyClients => "too_many_clients",
            Code::RequestTimeout => "request_timeout",
            Code::NotReady => "not_ready",
            Code::Unsupported => "unsupported",
            Code::Internal => "internal",
        }
    }

    pub fn status(self) -> u16 {
        match self {
            Code::InvalidArgument
            | Code::InvalidScore
            | Code::InvalidMember
            | Code::InvalidBoardName
            | Code::InvalidData
            | Code::InvalidConfig
            | Code::MalformedRequest => 400,
            Code::Unauthorized => 401,
            Code::Forbidden => 403,
            Code::BoardNotFound | Code::MemberNotFound | Code::NotFound => 404,
            Code::MethodNotAllowed => 405,
            Code::RequestTimeout => 408,
            Code::BoardExists | Code::ReadOnly | Code::ConfirmRerankRequired | Code::WrongType => {
                409
            }
            Code::PayloadTooLarge => 413,
            Code::UriTooLong => 414,
            Code::UnsupportedMediaType => 415,
            Code::RateLimited => 429,
            Code::HeadersTooLarge => 431,
            Code::Internal => 500,
            Code::Unsupported => 501,
            Code::StorageUnavailable
            | Code::OutOfMemory
            | Code::TooManyClients
            | Code::NotReady => 503,
        }
    }

    /// Every code, for the OpenAPI document and tests.
    pub const ALL: [Code; 29] = [
        Code::InvalidArgument,
        Code::InvalidScore,
        Code::InvalidMember,
        Code::InvalidBoardName,
        Code::InvalidData,
        Code::InvalidConfig,
        Code::MalformedRequest,
        Code::PayloadTooLarge,
        Code::UriTooLong,
        Code::UnsupportedMediaType,
        Code::HeadersTooLarge,
        Code::BoardNotFound,
        Code::MemberNotFound,
        Code::NotFound,
        Code::MethodNotAllowed,
        Code::BoardExists,
        Code::ReadOnly,
        Code::ConfirmRerankRequired,
        Code::WrongType,
        Code::Unauthorized,
        Code::Forbidden,
        Code::RateLimited,
        Code::StorageUnavailable,
        Code::OutOfMemory,
        Code::TooManyClients,
        Code::RequestTimeout,
        Code::NotReady,
        Code::Unsupported,
        Code::Internal,
    ];
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: Code,
    pub message: String,
    /// Seconds to wait before trying again, when the refusal knows (a
    /// rate limit): HTTP's `Retry-After`.
    pub retry_after_secs: Option<u64>,
}

impl ApiError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            retry_after_secs: None,
        }
    }

    /// With the seconds to wait before trying again.
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after_secs = Some(secs);
        self
    }
    pub fn bad(message: impl Into<String>) -> Self {
        Self::new(Code::InvalidArgument, message)
    }
    pub fn no_board(board: &str) -> Self {
        Self::new(Code::BoardNotFound, format!("board {board:?} not found"))
    }
    pub fn no_member(board: &str, member: &str) -> Self {
        Self::new(
            Code::MemberNotFound,
            format!("member {member:?} not found on board {board:?}"),
        )
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        let code = match &e {
            EngineError::NanScore | EngineError::NanResult | EngineError::OutOfBounds { .. } => {
                Code::InvalidScore
            }
            EngineError::BadMember { .. } => Code::InvalidMember,
            EngineError::BadBoardName => Code::InvalidBoardName,
            EngineError::BadData { .. } | EngineError::BadName { .. } => Code::InvalidData,
            EngineError::BadConfig(_) => Code::InvalidConfig,
            EngineError::BadArgument(_) => Code::InvalidArgument,
            EngineError::WrongKind(_) => Code::WrongType,
            EngineError::NoSuchBoard(_) => Code::BoardNotFound,
            EngineError::BoardExists(_) => Code::BoardExists,
            EngineError::ReadOnly(_) => Code::ReadOnly,
            EngineError::BoardFull { .. } | EngineError::DataTooLarge { .. } => {
                Code::PayloadTooLarge
            }
            // NotIndexed is handled by the service (it builds the index);
            // every other refusal is about the query or the board's config.
            EngineError::Search(podium_engine::search::SearchError::NotIndexed) => Code::Internal,
            // Search disabled on the board, or a field it does not search:
            // right for another board, a conflict with this one's config.
            EngineError::Search(
                podium_engine::search::SearchError::Disabled
                | podium_engine::search::SearchError::UnknownField { .. },
            ) => Code::WrongType,
            EngineError::Search(_) => Code::InvalidArgument,
            _ => Code::Internal,
        };
        ApiError::new(code, e.to_string())
    }
}
