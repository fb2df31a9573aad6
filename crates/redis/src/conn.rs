//! The connection to Redis or a Redis Cluster and the function library
//! every compound operation runs in: connecting, loading `podium.lua`
//! (again, when a node has lost it), FCALL and transactions, each bounded
//! by the call timeout.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, ErrorKind, FromRedisValue, Pipeline, RedisError, RedisFuture, Value};

use podium_core::error::{ApiError, Code};
use podium_core::schedule::{Clock, DateTime, SystemClock, Utc};

use crate::keys::config_key;
use crate::reply::{map_err, unavailable};

const LUA: &str = include_str!("podium.lua");

// The script checks member and name lengths against these, written out.
const _: () = assert!(
    podium_engine::MAX_MEMBER_BYTES == 512 && podium_engine::MAX_NAME_BYTES == 512,
    "update MAX_MEMBER / MAX_NAME in podium.lua"
);

/// The function library podium loads into Redis: `podium.lua` under a
/// name and function names that carry a hash of its text, so podium
/// versions with different scripts can serve the same Redis side by side
/// (each calls its own), and loading it again (`FUNCTION LOAD REPLACE`,
/// by any node) never changes what another node calls.
struct Library {
    /// The library's code, `#!lua name=…` line first.
    code: String,
    /// The function every operation can go through, and the one with the
    /// `no-writes` flag, for the operations that only read.
    rw: String,
    ro: String,
}

impl Library {
    fn new() -> Library {
        // FNV-1a: a name, not a defence; any change of the text changes it.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in LUA.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        let name = format!("podium_{h:016x}");
        let (rw, ro) = (name.clone(), format!("{name}_ro"));
        Library {
            code: format!("#!lua name={name}\nlocal FN_RW, FN_RO = '{rw}', '{ro}'\n{LUA}"),
            rw,
            ro,
        }
    }
}

/// The operations of the library's `no-writes` function (`READS` in
/// `podium.lua`).
fn reads_only(op: &str) -> bool {
    matches!(
        op,
        "info"
            | "window"
            | "rank_range"
            | "score_range"
            | "around"
            | "entry"
            | "ranks"
            | "score_at"
            | "count"
            | "staged"
            | "resort_info"
            | "events"
    )
}

/// The arguments of an operation that takes none.
pub(crate) const NO_ARGS: [&str; 0] = [];

/// Whether Redis answered that the function called is not loaded: a
/// Redis restarted without its data, a `FUNCTION FLUSH`, or a cluster
/// node that got the board's slot without the library.
fn missing_function(e: &RedisError) -> bool {
    e.kind() == ErrorKind::ResponseError
        && e.detail()
            .is_some_and(|d| d.starts_with("Function not found"))
}

/// A reply with Redis's error as an error. Only the top level is
/// looked at: the script returns its refusals there, and an error inside
/// an array (a pipeline's) is the caller's to read.
fn server_reply(r: redis::RedisResult<Value>) -> redis::RedisResult<Value> {
    match r? {
        Value::ServerError(e) => Err(e.into()),
        v => Ok(v),
    }
}

/// Connection settings; the defaults suit a LAN.
#[derive(Debug, Clone, Copy)]
pub struct RedisOptions {
    pub connect_timeout: Duration,
    /// A reply slower than this is a 503 (a 10k-entry submit takes tens of
    /// milliseconds inside Redis, so this is far above any normal call).
    pub response_timeout: Duration,
    /// The most any call may take, reconnection included: a call that
    /// finds the connection down waits for the reconnection, which must
    /// not hold a request for longer than a client would wait.
    pub call_timeout: Duration,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            connect_timeout: Duration::from_secs(2),
            response_timeout: Duration::from_secs(10),
            call_timeout: Duration::from_secs(15),
        }
    }
}

/// One Redis, or a cluster. Both are cheap handles to shared multiplexed
/// connections, cloned per call.
#[derive(Clone)]
pub(crate) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// How long a write waits for a re-sort of its board before it is
/// answered `storage_unavailable` (a re-sort of millions takes seconds).
const RESORT_WAIT: Duration = Duration::from_secs(120);

/// Redis holding the boards; podium nodes on top of it keep no state but
/// their live events' rings. Cloned (cheaply) by the tasks that read a
/// board's events.
#[derive(Clone)]
pub struct RedisBackend {
    conn: Conn,
    lib: Arc<Library>,
    call_timeout: Duration,
    /// Names archives (`reset`); injected by tests, as `Service`'s is.
    clock: Arc<dyn Clock>,
    /// Boards' configs as last read, for boards with sort keys.
    pub(crate) configs: Arc<crate::sorted::Configs>,
    /// Where and how to connect again: a reader of live events blocks on
    /// a connection of its own.
    url: Arc<str>,
    pub(crate) opts: RedisOptions,
    /// The boards this node's subscribers watch.
    pub(crate) feeds: Arc<crate::events::Feeds>,
}

impl RedisBackend {
    /// Connects to `redis://host:port[/db]` or
    /// `redis+cluster://h1:p1,h2:p2,...` and loads the script.
    pub async fn connect(url: &str) -> Result<RedisBackend, ApiError> {
        Self::connect_with(url, RedisOptions::default()).await
    }

    pub async fn connect_with(url: &str, opts: RedisOptions) -> Result<RedisBackend, ApiError> {
        let conn = open(url, opts).await?;
        let backend = RedisBackend {
            conn,
            lib: Arc::new(Library::new()),
            call_timeout: opts.call_timeout,
            clock: Arc::new(SystemClock),
            configs: Default::default(),
            url: url.into(),
            opts,
            feeds: Default::default(),
        };
        // Loaded up front (on every primary of a cluster), so requests go
        // straight to FCALL; a call that finds it missing loads it again.
        backend
            .bounded("", backend.load_library(&mut backend.conn.clone()))
            .await?;
        Ok(backend)
    }

    /// A connection of its own, for a command that blocks (`XREAD
    /// BLOCK`): on the shared multiplexed one it would hold up every
    /// reply queued behind it.
    pub(crate) async fn dedicated(&self) -> Result<Conn, ApiError> {
        open(&self.url, self.opts).await
    }
}

/// A connection to `redis://host:port[/db]` or
/// `redis+cluster://h1:p1,h2:p2,...`.
async fn open(url: &str, opts: RedisOptions) -> Result<Conn, ApiError> {
    let conn = if let Some(rest) = url.strip_prefix("redis+cluster://") {
        let nodes: Vec<String> = rest
            .split(',')
            .map(|h| h.trim().trim_end_matches('/'))
            .filter(|h| !h.is_empty())
            .map(|h| format!("redis://{h}"))
            .collect();
        if nodes.is_empty() {
            return Err(ApiError::bad(
                "redis+cluster:// needs at least one host:port",
            ));
        }
        let client = ClusterClientBuilder::new(nodes)
            .connection_timeout(opts.connect_timeout)
            .response_timeout(opts.response_timeout)
            .build()
            .map_err(|e| ApiError::bad(format!("bad redis cluster address: {e}")))?;
        Conn::Cluster(
            client
                .get_async_connection()
                .await
                .map_err(|e| unavailable(&e))?,
        )
    } else if url.starts_with("redis://") {
        let client = redis::Client::open(url)
            .map_err(|e| ApiError::bad(format!("bad redis address: {e}")))?;
        // The crate's default backoff (factor 100 on a 1 s minimum)
        // sleeps a minute or more between reconnection attempts, and
        // every request waits for the attempt in progress: retry fast
        // and give up soon, so a down Redis is a prompt 503 and a
        // restarted one is used within a second.
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(opts.connect_timeout)
            .set_response_timeout(opts.response_timeout)
            .set_number_of_retries(2)
            .set_factor(2)
            .set_max_delay(500);
        Conn::Single(
            client
                .get_connection_manager_with_config(config)
                .await
                .map_err(|e| unavailable(&e))?,
        )
    } else {
        return Err(ApiError::bad(
            "a redis backend is redis://host:port or redis+cluster://host:port,host:port,...",
        ));
    };
    Ok(conn)
}

impl RedisBackend {
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> RedisBackend {
        self.clock = clock;
        self
    }

    /// The time by the backend's clock (archive names, reset periods).
    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Runs a plain command (not the library's) within `call_timeout`.
    pub(crate) async fn command<T: FromRedisValue>(
        &self,
        board: &str,
        cmd: &Cmd,
    ) -> Result<T, ApiError> {
        self.bounded(board, cmd.query_async::<T>(&mut self.conn.clone()))
            .await
    }

    /// Runs a Redis call within `call_timeout`, mapping its errors.
    pub(crate) async fn bounded<T>(
        &self,
        board: &str,
        f: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, ApiError> {
        match tokio::time::timeout(self.call_timeout, f).await {
            Ok(r) => r.map_err(|e| map_err(board, e)),
            Err(_) => Err(ApiError::new(
                Code::StorageUnavailable,
                format!(
                    "redis unavailable: no answer within {:?}",
                    self.call_timeout
                ),
            )),
        }
    }

    /// Loads the function library (on every primary of a cluster).
    /// `REPLACE`: another node may have loaded it first, with the same
    /// text under the same name.
    async fn load_library(&self, conn: &mut Conn) -> redis::RedisResult<()> {
        let mut c = redis::cmd("FUNCTION");
        c.arg("LOAD").arg("REPLACE").arg(&self.lib.code);
        c.query_async::<Value>(conn).await.map(drop)
    }

    /// The FCALL of operation `op` on `board`.
    pub(crate) fn fcall<I, A>(&self, board: &str, op: &str, args: I) -> Cmd
    where
        I: IntoIterator<Item = A>,
        A: redis::ToRedisArgs,
    {
        let mut c = redis::cmd("FCALL");
        let f = if reads_only(op) {
            &self.lib.ro
        } else {
            &self.lib.rw
        };
        c.arg(f.as_str()).arg(1).arg(config_key(board)).arg(op);
        for a in args {
            c.arg(a);
        }
        c
    }

    /// Sends an FCALL; when the node has lost the library (restarted
    /// empty, flushed, or a cluster node new to the slot), loads it and
    /// sends the call again.
    async fn send(&self, cmd: &Cmd) -> redis::RedisResult<Value> {
        let mut conn = self.conn.clone();
        match server_reply(conn.req_packed_command(cmd).await) {
            Err(e) if missing_function(&e) => {
                self.load_library(&mut conn).await?;
                server_reply(conn.req_packed_command(cmd).await)
            }
            r => r,
        }
    }

    /// Runs operation `op` of the script on `board`.
    pub(crate) async fn call<I, A>(&self, board: &str, op: &str, args: I) -> Result<Value, ApiError>
    where
        I: IntoIterator<Item = A>,
        A: redis::ToRedisArgs,
    {
        let cmd = self.fcall(board, op, args);
        // A board being re-sorted holds its writes, as the embedded
        // engine's write lock does; a re-sort whose podium stopped lets go
        // when its lease ends.
        let start = std::time::Instant::now();
        loop {
            match self.bounded(board, self.send(&cmd)).await {
                Err(e) if crate::reply::is_resorting(&e) && start.elapsed() < RESORT_WAIT => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                r => return r,
            }
        }
    }

    /// Runs a MULTI/EXEC of FCALLs and commands; returns EXEC's replies.
    /// When the node has lost the function library, no FCALL of it ran
    /// (the caller's commands must be safe then: see `zadd_open`): loads
    /// it and runs the transaction again, once. The missing library shows
    /// as an FCALL's error among the replies on a single Redis, and as the
    /// whole call's error on a cluster (the crate raises errors found in a
    /// pipeline's replies there).
    pub(crate) async fn transaction(&self, tx: &Pipeline) -> redis::RedisResult<Vec<Value>> {
        let mut conn = self.conn.clone();
        let mut reloaded = false;
        loop {
            let r = conn
                .req_packed_commands(tx, tx.len() + 1, 1)
                .await
                .and_then(|mut out| match out.pop() {
                    Some(Value::Array(a)) => Ok(a),
                    Some(Value::ServerError(e)) => Err(e.into()),
                    _ => Err(RedisError::from((
                        ErrorKind::ResponseError,
                        "unexpected reply to EXEC",
                    ))),
                });
            let missing = match &r {
                Ok(items) => items.iter().any(
                    |v| matches!(v, Value::ServerError(e) if missing_function(&e.clone().into())),
                ),
                Err(e) => missing_function(e),
            };
            if !missing || reloaded {
                return r;
            }
            reloaded = true;
            self.load_library(&mut conn).await?;
        }
    }
}
