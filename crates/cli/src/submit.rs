//! `podium submit BOARD MEMBER SCORE`: one score (or, on a board with
//! sort keys, `KEY=VALUE,…`), and where it put the member.

use anyhow::{anyhow, Result};
use podium_core::api::Num;
use podium_core::api::{parse_score, NamedScores, Score, SubmitIn};

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
    /// The score: a number, `inf` or `-inf`; on a board with sort keys,
    /// the keys' values as `KEY=VALUE,…` (e.g. `laps=10,time_ms=61234`).
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
    let mut entry = if a.score.contains('=') {
        SubmitIn {
            score: Score::ABSENT,
            scores: Some(parse_scores(&a.score)?),
            ..SubmitIn::new(a.member.clone(), 0.0)
        }
    } else {
        let score = parse_score(&a.score).map_err(|e| anyhow!("{e}"))?;
        SubmitIn::new(a.member.clone(), score)
    };
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

/// `KEY=VALUE,…`: sort key values (integers stay exact).
fn parse_scores(text: &str) -> Result<NamedScores> {
    let mut v = Vec::new();
    for pair in text.split(',') {
        let (k, val) = pair
            .split_once('=')
            .ok_or_else(|| anyhow!("expected KEY=VALUE, got {pair:?}"))?;
        let n = match Num::parse(val) {
            Some(n @ Num::Int(_)) => n,
            _ => Num::Float(parse_score(val).map_err(|e| anyhow!("{k}: {e}"))?),
        };
        v.push((k.trim().to_string(), n));
    }
    Ok(NamedScores(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_values_parse_exactly() {
        let s = parse_scores("laps=10,time=61.5,xp=9007199254740993").unwrap();
        assert_eq!(
            s.0,
            [
                ("laps".to_string(), Num::Int(10)),
                ("time".to_string(), Num::Float(61.5)),
                ("xp".to_string(), Num::Int(9_007_199_254_740_993)),
            ]
        );
        assert!(parse_scores("laps").is_err());
        assert!(parse_scores("laps=x").is_err());
    }
}
