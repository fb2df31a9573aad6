//! `podium top BOARD`: one page of a board as a table.

use anyhow::Result;

use crate::render::{print_text, render_top};
use crate::transport::{Conn, Transport};

/// `podium top BOARD`.
#[derive(clap::Args, Debug)]
pub struct TopArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// The board to read.
    pub board: String,
    /// Page to show, from 1.
    #[arg(long, default_value_t = 1)]
    pub page: u64,
    /// Entries per page.
    #[arg(long, default_value_t = 25)]
    pub page_size: u64,
    /// Print the server's JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `podium top BOARD`: one page of the board as a table.
pub fn top(a: &TopArgs) -> Result<()> {
    let t = Transport::connect(&a.conn)?;
    let answer = t.top(&a.board, a.page, a.page_size)?;
    if a.json {
        return answer.print_json();
    }
    print_text(&render_top(&answer.value()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreachable_server() {
        // A port nothing listens on: bind one, then free it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut a = TopArgs {
            conn: Conn {
                rpc: "127.0.0.1:7071".into(),
                http: Some(format!("http://127.0.0.1:{port}")),
                api_key: None,
            },
            board: "b".into(),
            page: 1,
            page_size: 25,
            json: false,
        };
        let e = top(&a).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "cannot reach podium at http://127.0.0.1:{port}: is `podium serve` running?"
            )),
            "{e}"
        );
        a.conn.http = None;
        a.conn.rpc = format!("127.0.0.1:{port}");
        let e = top(&a).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "cannot reach podium at 127.0.0.1:{port}: is `podium serve` running?"
            )),
            "{e}"
        );
        a.conn.rpc = "nonsense".into();
        assert!(top(&a).unwrap_err().to_string().contains("nonsense"));
    }
}
