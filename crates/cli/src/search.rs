//! `podium search BOARD QUERY`: the members whose names match, best
//! first.

use anyhow::Result;

use crate::render::{print_text, render_search};
use crate::transport::{Conn, SearchQuery, Transport};

/// `podium search BOARD QUERY`.
#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// The board to search.
    pub board: String,
    /// Words to find in members' names, e.g. `ali`, `jean luc` or
    /// `team:red al*` (see docs/search.md); quote it for the shell.
    #[arg(allow_hyphen_values = true)]
    pub query: String,
    /// Matches shown at most.
    #[arg(long, default_value_t = 25)]
    pub limit: u64,
    /// Matches skipped first (the next page starts at offset + limit).
    #[arg(long, default_value_t = 0)]
    pub offset: u64,
    /// Also show each match's data.
    #[arg(long)]
    pub with_data: bool,
    /// Print the server's JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `podium search BOARD QUERY`: the matching members, best first.
pub fn search(a: &SearchArgs) -> Result<()> {
    let t = Transport::connect(&a.conn)?;
    let q = SearchQuery {
        query: &a.query,
        limit: a.limit,
        offset: a.offset,
        with_data: a.with_data,
    };
    let answer = t.search(&a.board, &q)?;
    if a.json {
        return answer.print_json();
    }
    print_text(&render_search(&answer.value()?, a.with_data))
}
