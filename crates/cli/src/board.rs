//! The commands about boards as a whole: `podium boards` (the list),
//! `podium board create|update|info|delete`, `podium reset` (archive and
//! empty) and `podium merge` (a board overwritten with the union of
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
    /// Create a board (refused if it exists: `update` changes one).
    Create(BoardConfigArgs),
    /// Reconfigure a board, or create it with this config.
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
    /// (docs/spec.md §1); `@FILE` reads it from a file. Default: {}.
    #[arg(long, default_value = "{}")]
    pub config: String,
    /// Print the server's JSON instead of lines.
    #[arg(long)]
    pub json: bool,
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
        BoardAction::Create(c) | BoardAction::Update(c) => {
            let create = matches!(a.action, BoardAction::Create(_));
            let config = config_of(&c.config)?;
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
            let answer = t.call::<BoardOut>(
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
            )?;
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
