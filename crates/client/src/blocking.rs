//! The client for synchronous code: [`Client`] owns a current-thread tokio
//! runtime and the async [`crate::Client`] running on it. The connection's
//! tasks run while a call of this client waits, so requests issued with
//! [`Client::start`] go out (together) at the next wait.

use std::future::Future;
use std::net::ToSocketAddrs;
use std::time::Duration;

use rmpv::Value;
use serde::de::DeserializeOwned;
use tokio::runtime::Runtime;

use crate::{
    BoardInfo, BoardSize, ClientError, Config, Entry, ImportResult, Page, Params, Range, Rank,
    RawResponse, ResponseFuture, Result, Submission,
};

/// A blocking connection to podium's MessagePack-RPC port.
pub struct Client {
    rt: Runtime,
    inner: crate::Client,
}

impl Client {
    /// Connects with the default [`Config`].
    pub fn connect(addr: impl ToSocketAddrs) -> Result<Client> {
        Client::connect_with(addr, Config::default())
    }

    /// Connects to the first of `addr`'s addresses that accepts, within
    /// `timeout` each.
    pub fn connect_timeout(
        addr: impl ToSocketAddrs,
        timeout: Duration,
        config: Config,
    ) -> Result<Client> {
        let mut last = None;
        for a in addr.to_socket_addrs()? {
            match std::net::TcpStream::connect_timeout(&a, timeout) {
                Ok(s) => return Client::from_std(s, config),
                Err(e) => last = Some(e),
            }
        }
        Err(ClientError::Io(last.unwrap_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "no address to connect to")
        })))
    }

    pub fn connect_with(addr: impl ToSocketAddrs, config: Config) -> Result<Client> {
        let mut last = None;
        for a in addr.to_socket_addrs()? {
            match std::net::TcpStream::connect(a) {
                Ok(s) => return Client::from_std(s, config),
                Err(e) => last = Some(e),
            }
        }
        Err(ClientError::Io(last.unwrap_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "no address to connect to")
        })))
    }

    fn from_std(s: std::net::TcpStream, config: Config) -> Result<Client> {
        s.set_nodelay(true)?;
        s.set_nonblocking(true)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let inner = {
            let _guard = rt.enter();
            let sock = tokio::net::TcpStream::from_std(s)?;
            crate::Client::from_stream(sock, config)
        };
        Ok(Client { rt, inner })
    }

    /// The async client underneath (its futures must be driven by
    /// [`Client::block_on`]).
    pub fn as_async(&self) -> &crate::Client {
        &self.inner
    }

    /// Runs `f` on this client's runtime, the connection's tasks with it.
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// Total bytes received on the connection so far.
    pub fn bytes_received(&self) -> u64 {
        self.inner.bytes_received()
    }

    /// Calls `method(params)` and waits for its result.
    pub fn call<P: Params + ?Sized>(&self, method: &str, params: &P) -> Result<Value> {
        self.rt.block_on(self.inner.call(method, params))
    }

    /// Calls `method(params)` and waits for the raw response.
    pub fn call_raw<P: Params + ?Sized>(&self, method: &str, params: &P) -> Result<RawResponse> {
        self.rt.block_on(self.inner.call_raw(method, params))
    }

    /// Calls `method(params)` and decodes its result into `T`.
    pub fn call_as<T: DeserializeOwned, P: Params + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<T> {
        self.call_raw(method, params)?.decode()
    }

    /// Issues a call without waiting: pass the future to [`Client::wait`]
    /// later. Several started calls are pipelined.
    pub fn start<P: Params + ?Sized>(&self, method: &str, params: &P) -> ResponseFuture {
        self.inner.call_raw(method, params)
    }

    /// Waits for a started call.
    pub fn wait(&self, f: ResponseFuture) -> Result<RawResponse> {
        self.rt.block_on(f)
    }

    /// Waits for a started call at most `timeout`; past it, the call fails
    /// with an `Io` error of kind `TimedOut` (its answer, if it comes, is
    /// dropped).
    pub fn wait_timeout(&self, f: ResponseFuture, timeout: Duration) -> Result<RawResponse> {
        self.rt.block_on(async move {
            match tokio::time::timeout(timeout, f).await {
                Ok(r) => r,
                Err(_) => Err(ClientError::Io(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no answer within {timeout:?}"),
                ))),
            }
        })
    }

    /// Waits for a started call at most `timeout`: its answer, or `None`
    /// past it with the call still under way (`f` can be waited for
    /// again).
    pub fn wait_for(
        &self,
        f: &mut ResponseFuture,
        timeout: Duration,
    ) -> Option<Result<RawResponse>> {
        self.rt
            .block_on(async move { tokio::time::timeout(timeout, f).await.ok() })
    }

    /// Waits for a started call, calling `tick(bytes received so far on
    /// the connection)` every `every` meanwhile (a progress bar).
    pub fn wait_with_progress(
        &self,
        f: ResponseFuture,
        every: Duration,
        mut tick: impl FnMut(u64),
    ) -> Result<RawResponse> {
        let inner = &self.inner;
        self.rt.block_on(async move {
            let mut f = f;
            let mut t = tokio::time::interval(every);
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    r = &mut f => return r,
                    _ = t.tick() => tick(inner.bytes_received()),
                }
            }
        })
    }

    /// Sends every call at once (pipelined on the connection), then waits
    /// for all; the results come in the order of `calls`.
    pub fn pipeline<M: AsRef<str>, P: Params>(&self, calls: Vec<(M, P)>) -> Vec<Result<Value>> {
        let futs: Vec<ResponseFuture> = calls
            .iter()
            .map(|(m, p)| self.inner.call_raw(m.as_ref(), p))
            .collect();
        self.rt.block_on(async move {
            let mut out = Vec::with_capacity(futs.len());
            for f in futs {
                out.push(f.await.and_then(|r| r.value()));
            }
            out
        })
    }

    /// Sends a notification (no answer).
    pub fn notify<P: Params + ?Sized>(&self, method: &str, params: &P) -> Result<()> {
        self.inner.notify(method, params)?;
        // Let the writer run; a notification has nothing to wait for.
        self.rt.block_on(tokio::task::yield_now());
        Ok(())
    }

    pub fn submit(&self, board: &str, entry: &Submission) -> Result<Value> {
        self.rt.block_on(self.inner.submit(board, entry))
    }

    pub fn submit_many(&self, board: &str, entries: &[Submission]) -> Result<Value> {
        self.rt.block_on(self.inner.submit_many(board, entries))
    }

    pub fn import(&self, board: &str, entries: &[Submission]) -> Result<ImportResult> {
        self.rt.block_on(self.inner.import(board, entries))
    }

    pub fn top(&self, board: &str, page: u64, page_size: u64) -> Result<Page> {
        self.rt.block_on(self.inner.top(board, page, page_size))
    }

    pub fn rank(&self, board: &str, member: &str) -> Result<Rank> {
        self.rt.block_on(self.inner.rank(board, member))
    }

    pub fn entry(&self, board: &str, member: &str) -> Result<Value> {
        self.rt.block_on(self.inner.entry(board, member))
    }

    pub fn around(&self, board: &str, member: &str, page_size: u64) -> Result<Value> {
        self.rt
            .block_on(self.inner.around(board, member, page_size))
    }

    pub fn range_by_rank(&self, board: &str, start: u64, stop: u64) -> Result<Range> {
        self.rt
            .block_on(self.inner.range_by_rank(board, start, stop))
    }

    pub fn export(&self, board: &str) -> Result<Vec<Entry>> {
        self.rt.block_on(self.inner.export(board))
    }

    pub fn board_info(&self, board: &str) -> Result<BoardInfo> {
        self.rt.block_on(self.inner.board_info(board))
    }

    pub fn board_create(&self, board: &str, config: Value) -> Result<BoardInfo> {
        self.rt.block_on(self.inner.board_create(board, config))
    }

    pub fn board_patch(&self, board: &str, patch: Value) -> Result<BoardInfo> {
        self.rt.block_on(self.inner.board_patch(board, patch))
    }

    pub fn board_delete(&self, board: &str) -> Result<Value> {
        self.rt.block_on(self.inner.board_delete(board))
    }

    pub fn boards(&self) -> Result<Vec<BoardSize>> {
        self.rt.block_on(self.inner.boards())
    }

    pub fn auth(&self, key: &str) -> Result<String> {
        self.rt.block_on(self.inner.auth(key))
    }
}
