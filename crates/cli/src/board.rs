//! The commands about boards as a whole: `podium boards` (the list),
//! `podium board create|set|update|info|delete` (`set` changes the fields
//! it names, `update` replaces the whole config), `podium reset` (archive
//! and empty) and `podium merge` (a board overwritten with the union of
//! others).

use anyhow::{anyhow, bail, Context, Result};
use podium_core::api::{BoardOut, BoardsOut, CombineOut, ResetOut};
use serde_json::{json, Value};

use crate::render::{render_board, render_boards};
use crate::transport::{Conn, HttpReq, RpcReq, Transport};

/// `podium boards`.
#[derive(clap::Args, Debug)]
pub struct BoardsArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// Print the server's JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Every board with its size, archives under their board.
pub fn boards(a: &BoardsArgs) -> Result<()> {
    let t = Transport::connect(&a.conn)?;
    let answer = t.call::<BoardsOut>(
        RpcReq {
            method: "boards",
            params: vec![],
        },
        HttpReq {
            method: "GET",
            board: None,
            path: "/boards".into(),
            body: None,
        },
    )?;
    answer.show(a.json, |v| render_boards(&v))
}

/// `podium board ACTION`.
#[derive(clap::Args, Debug)]
pub struct BoardArgs {
    #[command(subcommand)]
    pub action: BoardAction,
}

#[derive(clap::Subcommand, Debug)]
pub enum BoardAction {
    /// Create a board (refused if it exists: `set` changes one).
    Create(BoardConfigArgs),
    /// Change some fields of a board's config, keeping the others:
    /// `podium board set weekly keep_archives=8 reset=monthly`.
    Set(BoardSetArgs),
    /// Replace a board's whole config (fields left out take their
    /// defaults), or create the board with it.
    Update(BoardConfigArgs),
    /// A board's size, memory, config and reset period.
    Info(BoardNameArgs),
    /// Delete a board with its config (its archives stay).
    Delete(BoardNameArgs),
}

#[derive(clap::Args, Debug)]
pub struct BoardConfigArgs {
    #[command(flatten)]
    pub conn: Conn,
    pub board: String,
    /// The config as JSON, e.g. '{"order":"desc","reset":"weekly"}'
    /// (docs/spec.md §1); `@FILE` reads it from a file. `create` without
    /// it: the defaults; `update` needs it (it replaces the whole config).
    #[arg(long)]
    pub config: Option<String>,
    /// Allow the change to re-rank the board's members (a change of
    /// order, ranking, tiebreak or sort keys); without it such a change
    /// is refused.
    #[arg(long)]
    pub rerank: bool,
    /// Print the server's JSON instead of lines.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct BoardSetArgs {
    #[command(flatten)]
    pub conn: Conn,
    pub board: String,
    /// The fields to change, as FIELD=VALUE: the value is read as JSON
    /// when it is JSON (8, true, null, ["name","team"]), else as a string
    /// (order=asc, reset='0 0 * * 1'); null puts a field back to its
    /// default.
    #[arg(value_name = "FIELD=VALUE")]
    pub fields: Vec<String>,
    /// Allow the change to re-rank the board's members (a change of
    /// order, ranking, tiebreak or sort keys); without it such a change
    /// is refused.
    #[arg(long)]
    pub rerank: bool,
    /// Print the server's JSON instead of lines.
    #[arg(long)]
    pub json: bool,
}

/// `FIELD=VALUE` arguments as a JSON merge patch; none is refused, as a
/// command that changes nothing would still say "updated".
pub fn patch_of(fields: &[String]) -> Result<serde_json::Map<String, Value>> {
    if fields.is_empty() {
        bail!(
            "nothing to change: name the fields, e.g. `podium board set BOARD keep_archives=8` \
             (null puts a field back to its default)"
        );
    }
    let mut patch = serde_json::Map::new();
    for f in fields {
        let Some((k, v)) = f.split_once('=') else {
            bail!("{f:?} is not FIELD=VALUE, e.g. keep_archives=8 or order=asc");
        };
        let k = k.trim();
        if k.is_empty() {
            bail!("{f:?} names no field: write FIELD=VALUE, e.g. keep_archives=8");
        }
        if k == "confirm_rerank" {
            bail!("confirm_rerank is not a config field: give --rerank");
        }
        let value = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()));
        if patch.insert(k.to_string(), value).is_some() {
            bail!("{k} is given twice");
        }
    }
    Ok(patch)
}

#[derive(clap::Args, Debug)]
pub struct BoardNameArgs {
    #[command(flatten)]
    pub conn: Conn,
    pub board: String,
    /// Print the server's JSON instead of lines.
    #[arg(long)]
    pub json: bool,
}

/// A refused re-rank, with the command line's way to confirm it.
fn rerank_hint(e: anyhow::Error) -> anyhow::Error {
    if e.to_string().contains("confirm_rerank_required") {
        e.context("add --rerank to re-rank the board")
    } else {
        e
    }
}

/// `--config`: JSON text, or `@FILE`.
fn config_of(text: &str) -> Result<Value> {
    let text = match text.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the config file {path}"))?,
        None => text.to_string(),
    };
    let v: Value = serde_json::from_str(&text).map_err(|e| {
        anyhow!("--config is not JSON ({e}): give a JSON object, e.g. '{{\"order\":\"desc\"}}'")
    })?;
    if !v.is_object() {
        bail!("--config must be a JSON object, e.g. '{{\"order\":\"desc\"}}'");
    }
    Ok(v)
}

fn info_req(board: &str) -> (RpcReq<'static>, HttpReq<'_>) {
    (
        RpcReq {
            method: "board_info",
            params: vec![json!(board)],
        },
        HttpReq {
            method: "GET",
            board: Some(board),
            path: String::new(),
            body: None,
        },
    )
}

pub fn board(a: &BoardArgs) -> Result<()> {
    match &a.action {
        BoardAction::Set(c) => {
            let mut patch = patch_of(&c.fields)?;
            if c.rerank {
                patch.insert("confirm_rerank".into(), Value::Bool(true));
            }
            let patch = Value::Object(patch);
            let t = Transport::connect(&c.conn)?;
            let answer = t
                .call::<BoardOut>(
                    RpcReq {
                        method: "board_patch",
                        params: vec![json!(c.board), patch.clone()],
                    },
                    HttpReq {
                        method: "PATCH",
                        board: Some(&c.board),
                        path: String::new(),
                        body: Some(patch),
                    },
                )
                .map_err(rerank_hint)?;
            answer.show(c.json, |b| {
                format!("updated board {}\n{}", b.board, render_board(&b))
            })
        }
        BoardAction::Create(c) | BoardAction::Update(c) => {
            let create = matches!(a.action, BoardAction::Create(_));
            let mut config = match (&c.config, create) {
                (Some(text), _) => config_of(text)?,
                (None, true) => json!({}),
                (None, false) => bail!(
                    "nothing to change: `podium board update` replaces the whole config, give it \
                     with --config JSON; `podium board set {} FIELD=VALUE ...` changes some fields \
                     and keeps the others",
                    c.board
                ),
            };
            if c.rerank {
                config["confirm_rerank"] = Value::Bool(true);
            }
            let t = Transport::connect(&c.conn)?;
            // HTTP has one route for both (PUT): a create looks first.
            if create && matches!(t, Transport::Http(_)) {
                let (rpc, http) = info_req(&c.board);
                if t.call::<BoardOut>(rpc, http).is_ok() {
                    bail!(
                        "board {:?} exists: `podium board update {}` changes its config",
                        c.board,
                        c.board
                    );
                }
            }
            let answer = t
                .call::<BoardOut>(
                    RpcReq {
                        method: if create {
                            "board_create"
                        } else {
                            "board_update"
                        },
                        params: vec![json!(c.board), config.clone()],
                    },
                    HttpReq {
                        method: "PUT",
                        board: Some(&c.board),
                        path: String::new(),
                        body: Some(config),
                    },
                )
                .map_err(rerank_hint)?;
            answer.show(c.json, |b| {
                let verb = match (create, b.created) {
                    (true, _) | (false, Some(true)) => "created",
                    _ => "updated",
                };
                format!("{verb} board {}\n{}", b.board, render_board(&b))
            })
        }
        BoardAction::Info(n) => {
            let t = Transport::connect(&n.conn)?;
            let (rpc, http) = info_req(&n.board);
            let answer = t.call::<BoardOut>(rpc, http)?;
            answer.show(n.json, |v| render_board(&v))
        }
        BoardAction::Delete(n) => {
            let t = Transport::connect(&n.conn)?;
            let answer = t.call::<Value>(
                RpcReq {
                    method: "board_delete",
                    params: vec![json!(n.board)],
                },
                HttpReq {
                    method: "DELETE",
                    board: Some(&n.board),
                    path: String::new(),
                    body: None,
                },
            )?;
            answer.show(n.json, |_| format!("deleted board {}\n", n.board))
        }
    }
}

/// `podium reset BOARD`.
#[derive(clap::Args, Debug)]
pub struct ResetArgs {
    #[command(flatten)]
    pub conn: Conn,
    pub board: String,
    /// Print the server's JSON instead of a line.
    #[arg(long)]
    pub json: bool,
}

/// Archives a board now and empties it.
pub fn reset(a: &ResetArgs) -> Result<()> {
    let t = Transport::connect(&a.conn)?;
    let answer = t.call::<ResetOut>(
        RpcReq {
            method: "reset",
            params: vec![json!(a.board)],
        },
        HttpReq {
            method: "POST",
            board: Some(&a.board),
            path: "/reset".into(),
            body: None,
        },
    )?;
    answer.show(a.json, |r| {
        format!(
            "reset {}: {} members archived as {}\n",
            r.board, r.archived, r.archive
        )
    })
}

/// `podium merge DEST SOURCE...`.
#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// The board overwritten with the union.
    pub dest: String,
    /// The boards whose members are summed (or taken the min or max of).
    #[arg(required = true)]
    pub sources: Vec<String>,
    /// One weight per source, comma-separated (each score is multiplied).
    #[arg(long, value_delimiter = ',')]
    pub weights: Option<Vec<f64>>,
    /// How a member's scores combine: sum, min or max.
    #[arg(long)]
    pub aggregate: Option<String>,
    /// Print the server's JSON instead of a line.
    #[arg(long)]
    pub json: bool,
}

/// Overwrites `dest` with the union of the sources.
pub fn merge(a: &MergeArgs) -> Result<()> {
    let mut opts = serde_json::Map::new();
    if let Some(w) = &a.weights {
        opts.insert("weights".into(), json!(w));
    }
    if let Some(g) = &a.aggregate {
        opts.insert("aggregate".into(), json!(g));
    }
    let mut body = opts.clone();
    body.insert("sources".into(), json!(a.sources));
    let t = Transport::connect(&a.conn)?;
    let answer = t.call::<CombineOut>(
        RpcReq {
            method: "merge",
            params: vec![json!(a.dest), json!(a.sources), Value::Object(opts)],
        },
        HttpReq {
            method: "POST",
            board: Some(&a.dest),
            path: "/merge".into(),
            body: Some(Value::Object(body)),
        },
    )?;
    answer.show(a.json, |r| {
        format!(
            "merged {} boards into {}: {} members\n",
            a.sources.len(),
            r.board,
            r.members
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_reads_field_value_pairs_and_refuses_nothing() {
        let p = patch_of(&[
            "keep_archives=8".into(),
            "order=asc".into(),
            "min_score=null".into(),
            "search_fields=[\"name\",\"team\"]".into(),
            "reset=0 0 * * 1".into(),
        ])
        .unwrap();
        assert_eq!(
            Value::Object(p),
            json!({"keep_archives": 8, "order": "asc", "min_score": null,
                "search_fields": ["name", "team"], "reset": "0 0 * * 1"})
        );
        let e = patch_of(&[]).unwrap_err().to_string();
        assert!(e.contains("nothing to change"), "{e}");
        for bad in ["keep_archives", "=8", "confirm_rerank=true"] {
            assert!(patch_of(&[bad.into()]).is_err(), "{bad}");
        }
        assert!(patch_of(&["a=1".into(), "a=2".into()]).is_err());
    }
}
