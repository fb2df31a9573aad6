//! The commands about members of a board: `podium rank`, `around`,
//! `entry` (a member's rank, score, percentile, page and data) and
//! `remove` (members out).

use anyhow::Result;
use podium_core::api::{AroundOut, EntryInfoOut, RankOut, RemovedOut};
use serde_json::json;

use crate::render::{fmt_score, render_around, render_entry};
use crate::transport::{member_path, Conn, HttpReq, RpcReq, Transport};

/// `podium rank BOARD MEMBER`.
#[derive(clap::Args, Debug)]
pub struct RankArgs {
    #[command(flatten)]
    pub conn: Conn,
    pub board: String,
    pub member: String,
    /// Print the server's JSON instead of a line.
    #[arg(long)]
    pub json: bool,
}

/// A member's rank and score.
pub fn rank(a: &RankArgs) -> Result<()> {
    let t = Transport::connect(&a.conn)?;
    let answer = t.call::<RankOut>(
        RpcReq {
            method: "rank",
            params: vec![json!(a.board), json!(a.member)],
        },
        HttpReq {
            method: "GET",
            board: Some(&a.board),
            path: member_path("rank", &a.member, ""),
            body: None,
        },
    )?;
    answer.show(a.json, |r| {
        format!(
            "{}: rank {}, score {}\n",
            r.member,
            r.rank,
            fmt_score(r.score.0)
        )
    })
}

/// `podium around BOARD MEMBER`.
#[derive(clap::Args, Debug)]
pub struct AroundArgs {
    #[command(flatten)]
    pub conn: Conn,
    pub board: String,
    pub member: String,
    /// Entries shown, the member in the middle.
    #[arg(long, default_value_t = 11)]
    pub page_size: u64,
    /// Print the server's JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The entries around a member.
pub fn around(a: &AroundArgs) -> Result<()> {
    let t = Transport::connect(&a.conn)?;
    let answer = t.call::<AroundOut>(
        RpcReq {
            method: "around",
            params: vec![
                json!(a.board),
                json!(a.member),
                json!({"page_size": a.page_size}),
            ],
        },
        HttpReq {
            method: "GET",
            board: Some(&a.board),
            path: member_path("around", &a.member, &format!("page_size={}", a.page_size)),
            body: None,
        },
    )?;
    answer.show(a.json, |v| render_around(&v))
}

/// `podium entry BOARD MEMBER`.
#[derive(clap::Args, Debug)]
pub struct EntryArgs {
    #[command(flatten)]
    pub conn: Conn,
    pub board: String,
    pub member: String,
    /// The page size the member's page number is counted in.
    #[arg(long, default_value_t = 25)]
    pub page_size: u64,
    /// Print the server's JSON instead of lines.
    #[arg(long)]
    pub json: bool,
}

/// A member's entry: rank, score, name, data, percentile and page.
pub fn entry(a: &EntryArgs) -> Result<()> {
    let t = Transport::connect(&a.conn)?;
    let answer = t.call::<EntryInfoOut>(
        RpcReq {
            method: "entry",
            params: vec![
                json!(a.board),
                json!(a.member),
                json!({"page_size": a.page_size, "with_data": true}),
            ],
        },
        HttpReq {
            method: "GET",
            board: Some(&a.board),
            path: member_path(
                "members",
                &a.member,
                &format!("page_size={}&with_data=true", a.page_size),
            ),
            body: None,
        },
    )?;
    answer.show(a.json, |v| render_entry(&v))
}

/// `podium remove BOARD MEMBER...`.
#[derive(clap::Args, Debug)]
pub struct RemoveArgs {
    #[command(flatten)]
    pub conn: Conn,
    pub board: String,
    /// The members to take off the board.
    #[arg(required = true)]
    pub members: Vec<String>,
    /// Print the server's JSON instead of a line.
    #[arg(long)]
    pub json: bool,
}

/// Takes members off a board.
pub fn remove(a: &RemoveArgs) -> Result<()> {
    let t = Transport::connect(&a.conn)?;
    let answer = t.call::<RemovedOut>(
        RpcReq {
            method: "remove",
            params: vec![json!(a.board), json!(a.members)],
        },
        HttpReq {
            method: "POST",
            board: Some(&a.board),
            path: "/remove".into(),
            body: Some(json!({"members": a.members})),
        },
    )?;
    answer.show(a.json, |r| {
        format!(
            "removed {} of {} from {}\n",
            r.removed,
            a.members.len(),
            r.board
        )
    })
}
