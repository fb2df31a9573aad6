//! `podium submit BOARD MEMBER SCORE`: one score, and where it put the
//! member.

use anyhow::{anyhow, Result};
use podium_core::api::{parse_score, SubmitIn};

use crate::render::render_submit;
use crate::transport::{Conn, Transport};

/// `podium submit BOARD MEMBER SCORE`.
#[derive(clap::Args, Debug)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// The board to submit to.
    pub board: String,
    /// The member whose score this is.
    #[arg(allow_hyphen_values = true)]
    pub member: String,
    /// The score: a number, `inf` or `-inf`.
    #[arg(allow_hyphen_values = true)]
    pub score: String,
    /// `set`, `best` or `incr`; the board's default when absent.
    #[arg(long)]
    pub op: Option<String>,
    /// Display name of the member (`""` clears it).
    #[arg(long)]
    pub name: Option<String>,
    /// Print the server's JSON instead of a summary.
    #[arg(long)]
    pub json: bool,
}

/// `podium submit BOARD MEMBER SCORE`.
pub fn submit(a: &SubmitArgs) -> Result<()> {
    let score = parse_score(&a.score).map_err(|e| anyhow!("{e}"))?;
    let mut entry = SubmitIn::new(a.member.clone(), score);
    entry.op = a.op.clone();
    entry.name = a.name.clone();
    let t = Transport::connect(&a.conn)?;
    let answer = t.submit(&a.board, &entry)?;
    if a.json {
        return answer.print_json();
    }
    println!("{}", render_submit(&answer.value()?));
    Ok(())
}
