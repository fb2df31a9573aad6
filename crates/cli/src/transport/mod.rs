//! How the client commands reach a server: MessagePack-RPC (`--rpc`, the
//! default) or the HTTP API (`--http URL`), chosen once per command from
//! its [`Conn`]. Each command is written once against [`Transport`].

pub(crate) mod http;
mod rpc;

use std::io::Write;
use std::time::Duration;

use anyhow::Result;
use podium_core::api::{BoardOut, SearchOut, SubmitIn, SubmitOut, TopOut};
use serde::de::DeserializeOwned;
use serde::Serialize;

pub use http::{
    base_url, board_url, export_url, import_url, member_path, scores_url, search_url, segment,
    server_error, top_url, ServerError,
};

use crate::import::ImportInput;
use crate::render::print_raw;
use podium_client::ImportResult;

/// How long a small request (`top`, `submit`, board info) may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a download (export, backup) waits for its next bytes: a
/// stream runs as long as it needs, but a server that stops sending ends
/// it.
const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a small request may go unanswered before the port is asked
/// which protocol it speaks.
const PROBE_AFTER: Duration = Duration::from_secs(2);

/// A protocol a port answered in that is not the one asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Redis,
    Http,
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Protocol::Redis => "Redis protocol",
            Protocol::Http => "HTTP protocol",
        })
    }
}

/// What `addr` (HOST:PORT) speaks, asked on a connection of its own with a
/// Redis `PING` line: `+PONG` or a `-ERR`/`-NOAUTH` is Redis (podium's
/// Redis port too), `HTTP/` an HTTP server refusing the line. `None`:
/// neither, or no answer within a moment (a MessagePack-RPC server closes
/// the connection on bytes that are not MessagePack).
pub fn probe(addr: &str) -> Option<Protocol> {
    use std::io::Read;
    use std::net::{TcpStream, ToSocketAddrs};
    let wait = Duration::from_secs(2);
    let sa = addr.to_socket_addrs().ok()?.next()?;
    let mut s = TcpStream::connect_timeout(&sa, wait).ok()?;
    s.set_read_timeout(Some(wait)).ok()?;
    s.set_write_timeout(Some(wait)).ok()?;
    s.write_all(b"PING\r\n").ok()?;
    let mut head = [0u8; 5];
    let mut got = 0;
    while got < head.len() {
        match s.read(&mut head[got..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    match &head[..got] {
        [b'+' | b'-', ..] => Some(Protocol::Redis),
        h if h.starts_with(b"HTTP/") => Some(Protocol::Http),
        _ => None,
    }
}

/// Where the server is and how to authenticate.
#[derive(clap::Args, Debug, Clone)]
pub struct Conn {
    /// Address (HOST:PORT) of the podium server's MessagePack-RPC port.
    #[arg(
        long,
        env = crate::env::RPC_ADDR,
        default_value = "127.0.0.1:7071",
        value_name = "ADDR"
    )]
    pub rpc: String,
    /// Use the HTTP API at this base URL instead of MessagePack-RPC
    /// (e.g. http://127.0.0.1:7070); --rpc is then ignored.
    #[arg(
        long,
        visible_alias = "server",
        env = crate::env::URL,
        value_name = "URL"
    )]
    pub http: Option<String>,
    /// API key: sent with `auth` over RPC, as `Authorization: Bearer KEY`
    /// over HTTP. Given here it shows in `ps`; PODIUM_API_KEY does not.
    #[arg(long, env = "PODIUM_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
}

/// A connection to a server over one of its protocols.
pub enum Transport {
    Http(http::Http),
    Rpc(rpc::Rpc),
}

/// An operation as the HTTP API takes it: the method, the path (under
/// `/v1/boards/{board}` when `board` is given, else under `/v1`), the body.
pub struct HttpReq<'a> {
    pub method: &'static str,
    pub board: Option<&'a str>,
    pub path: String,
    pub body: Option<serde_json::Value>,
}

/// The same operation as a MessagePack-RPC call: the method and its
/// positional params.
pub struct RpcReq<'a> {
    pub method: &'a str,
    pub params: Vec<serde_json::Value>,
}

/// A `search` query and the page of matches wanted.
#[derive(Debug, Clone, Copy)]
pub struct SearchQuery<'a> {
    pub query: &'a str,
    pub limit: u64,
    pub offset: u64,
    pub with_data: bool,
}

/// A server's answer: over HTTP its JSON body, kept as sent (`--json`
/// prints it unchanged, and a table reads it only when one is wanted);
/// over RPC the decoded result.
pub enum Answer<T> {
    Body(Vec<u8>),
    Value(T),
}

impl<T: Serialize + DeserializeOwned> Answer<T> {
    /// Prints the answer as JSON, one document on stdout.
    pub fn print_json(&self) -> Result<()> {
        match self {
            Answer::Body(b) => print_raw(b),
            Answer::Value(v) => {
                println!("{}", serde_json::to_string(v)?);
                Ok(())
            }
        }
    }

    /// The answer as the server's JSON (`json`), else as `text` makes it.
    pub fn show(self, json: bool, text: impl FnOnce(T) -> String) -> Result<()> {
        if json {
            return self.print_json();
        }
        crate::render::print_text(&text(self.value()?))
    }

    pub fn value(self) -> Result<T> {
        match self {
            Answer::Body(b) => http::parse(&b),
            Answer::Value(v) => Ok(v),
        }
    }
}

/// An export under way: the server has accepted it, its entries are still
/// to be read.
pub enum Export<'a> {
    Http(http::HttpExport),
    Rpc(rpc::RpcExport<'a>),
}

impl Export<'_> {
    /// Writes the entries to `out` as NDJSON, best first, with progress
    /// bars over `members` unless `quiet`; returns the lines written.
    pub fn write(self, out: &mut dyn Write, members: u64, quiet: bool) -> Result<u64> {
        match self {
            Export::Http(e) => e.write(out, members, quiet),
            Export::Rpc(e) => e.write(out, members, quiet),
        }
    }
}

impl Transport {
    /// Connects over HTTP when `--http` is given, else over RPC.
    pub fn connect(conn: &Conn) -> Result<Transport> {
        Ok(match &conn.http {
            Some(url) => Transport::Http(http::Http::new(url, conn)?),
            None => Transport::Rpc(rpc::Rpc::connect(conn)?),
        })
    }

    pub fn top(&self, board: &str, page: u64, page_size: u64) -> Result<Answer<TopOut>> {
        match self {
            Transport::Http(h) => h.top(board, page, page_size),
            Transport::Rpc(r) => r.top(board, page, page_size),
        }
    }

    pub fn search(&self, board: &str, q: &SearchQuery) -> Result<Answer<SearchOut>> {
        match self {
            Transport::Http(h) => h.search(board, q),
            Transport::Rpc(r) => r.search(board, q),
        }
    }

    pub fn submit(&self, board: &str, entry: &SubmitIn) -> Result<Answer<SubmitOut>> {
        match self {
            Transport::Http(h) => h.submit(board, entry),
            Transport::Rpc(r) => r.submit(board, entry),
        }
    }

    pub fn board_info(&self, board: &str) -> Result<BoardOut> {
        match self {
            Transport::Http(h) => h.board_info(board),
            Transport::Rpc(r) => r.board_info(board),
        }
    }

    /// An operation with no method of its own here: over RPC `rpc`, over
    /// HTTP `http` (the two name the same operation).
    pub fn call<T: Serialize + DeserializeOwned>(
        &self,
        rpc: RpcReq<'_>,
        http: HttpReq<'_>,
    ) -> Result<Answer<T>> {
        match self {
            Transport::Http(h) => h.request(http),
            Transport::Rpc(r) => r.request(rpc),
        }
    }

    /// Refuses a board name the transport cannot carry (HTTP: one a URL
    /// path would resolve away), before any input is opened.
    pub fn check_board(&self, board: &str) -> Result<()> {
        match self {
            Transport::Http(h) => h.check_board(board),
            Transport::Rpc(_) => Ok(()),
        }
    }

    /// Imports the input into `board`.
    pub fn import(&self, board: &str, input: ImportInput) -> Result<ImportResult> {
        match self {
            Transport::Http(h) => h.import(board, input),
            Transport::Rpc(r) => r.import(board, input),
        }
    }

    /// Starts exporting `board`.
    pub fn export(&self, board: &str) -> Result<Export<'_>> {
        Ok(match self {
            Transport::Http(h) => Export::Http(h.export(board)?),
            Transport::Rpc(r) => Export::Rpc(r.export(board)),
        })
    }
}
