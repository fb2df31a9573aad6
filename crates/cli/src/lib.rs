//! The client commands of the `podium` binary (docs/spec.md §6): `top`,
//! `submit`, `search`, `import`, `export`, `watch` (a live view, over
//! the HTTP API's event stream), the member commands (`rank`, `around`,
//! `entry`, `remove`), the board commands (`boards`, `board
//! create|update|info|delete`, `reset`, `merge`) and `backup` /
//! `restore` ([`backup`]), talking to a running server
//! over MessagePack-RPC (`--rpc`, default `127.0.0.1:7071`, with
//! [`podium_client`]) or, with `--http URL`, over its HTTP API
//! (docs/spec.md §4).
//!
//! Requests and results use the shapes of [`podium_core::api`]. A server error
//! (an RPC error `[code, message]`, or over HTTP `{"error": {"code",
//! "message"}}` with a 4xx/5xx status) reads `message (code)`; an
//! unreachable server "cannot reach podium at ADDR: is `podium serve`
//! running?". Over RPC, `import` reads the NDJSON or CSV file itself and
//! sends it as `import` calls of 10,000 entries, several in flight, and
//! `export` receives one response and writes it out as NDJSON, entry by
//! entry; over HTTP both stream their bodies. A progress bar on stderr
//! follows long transfers (hidden when stderr is not a terminal, or with
//! `--quiet`).
//!
//! One module per command (`top`, `submit`, `search`, `import`, `export`:
//! its clap arguments and its one implementation; `member` and `board`
//! for the smaller commands), written against
//! [`transport::Transport`], which carries it over RPC or HTTP; [`input`]
//! reads import files, [`render`] shows results.

pub mod backup;
pub mod board;
pub mod env;
pub mod export;
pub mod import;
pub mod input;
pub mod member;
pub mod render;
pub mod search;
pub mod submit;
pub mod top;
pub mod transport;
pub mod watch;

pub use backup::{backup, restore, BackupArgs, RestoreArgs};
pub use board::{board, boards, merge, reset, BoardArgs, BoardsArgs, MergeArgs, ResetArgs};
pub use export::{export, ExportArgs};
pub use import::{import, ImportArgs};
pub use member::{around, entry, rank, remove, AroundArgs, EntryArgs, RankArgs, RemoveArgs};
pub use search::{search, SearchArgs};
pub use submit::{submit, SubmitArgs};
pub use top::{top, TopArgs};
pub use transport::Conn;
pub use watch::{watch, WatchArgs};

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::path::Path;

    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(subcommand)]
        cmd: Cmd,
    }

    #[derive(clap::Subcommand, Debug)]
    enum Cmd {
        Top(TopArgs),
        Submit(SubmitArgs),
        Search(SearchArgs),
        Import(ImportArgs),
        Export(ExportArgs),
    }

    #[test]
    fn command_lines() {
        let c =
            Cli::try_parse_from(["podium", "submit", "b", "m", "-inf", "--op", "best"]).unwrap();
        let Cmd::Submit(s) = c.cmd else { panic!() };
        assert_eq!(s.score, "-inf");
        assert_eq!(s.op.as_deref(), Some("best"));
        assert!(!s.json);
        let c = Cli::try_parse_from(["podium", "submit", "b", "m", "-5", "--json"]).unwrap();
        let Cmd::Submit(s) = c.cmd else { panic!() };
        assert_eq!(s.score, "-5");
        assert!(s.json);
        let c = Cli::try_parse_from([
            "podium",
            "top",
            "b",
            "--page",
            "3",
            "--server",
            "http://h:1",
            "--api-key",
            "k",
        ])
        .unwrap();
        let Cmd::Top(t) = c.cmd else { panic!() };
        assert_eq!((t.page, t.page_size), (3, 25));
        assert_eq!(t.conn.http.as_deref(), Some("http://h:1"));
        assert_eq!(t.conn.api_key.as_deref(), Some("k"));
        let c = Cli::try_parse_from(["podium", "top", "b", "--rpc", "h:9"]).unwrap();
        let Cmd::Top(t) = c.cmd else { panic!() };
        assert_eq!(t.conn.rpc, "h:9");
        assert_eq!(t.conn.http, None);
        let c =
            Cli::try_parse_from(["podium", "export", "b", "-o", "out.ndjson", "--quiet"]).unwrap();
        let Cmd::Export(e) = c.cmd else { panic!() };
        assert_eq!(e.output.as_deref(), Some(Path::new("out.ndjson")));
        let c = Cli::try_parse_from(["podium", "import", "b", "-", "--format", "csv"]).unwrap();
        let Cmd::Import(i) = c.cmd else { panic!() };
        assert_eq!(i.file, Path::new("-"));
        let c = Cli::try_parse_from(["podium", "search", "b", "-al", "--limit", "5"]).unwrap();
        let Cmd::Search(s) = c.cmd else { panic!() };
        assert_eq!((s.query.as_str(), s.limit, s.offset), ("-al", 5, 0));
        assert!(!s.with_data && s.conn.http.is_none());
    }
}
