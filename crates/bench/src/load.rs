//! Bulk loads through each server's own pipelined protocol, shared by the
//! network scenarios: podium's `submit_many` / `import` calls over
//! MessagePack-RPC (entries written straight into the request, no
//! intermediate values), Redis's `ZADD key score member …` commands, each
//! with a window of requests in flight on one connection.

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use indicatif::ProgressBar;
use podium_client::{Client, ClientError, Params, RawResponse, ResponseFuture};
use redis::aio::MultiplexedConnection;

use crate::net::{member_id, Window};

/// The scores of a load: member `m{i}` gets `i` (sequential) or the `i`th
/// of a list.
#[derive(Clone, Copy)]
pub enum Scores<'a> {
    Sequential,
    Given(&'a [f64]),
}

impl Scores<'_> {
    #[inline]
    pub fn get(&self, i: u64) -> f64 {
        match self {
            Scores::Sequential => i as f64,
            Scores::Given(s) => s[i as usize],
        }
    }
}

/// `[board, [{member, score[, name]}, …]]` for members
/// `first..first+count`; member `m{i}` is named `names[i]` when given.
pub struct EntryBatch<'a> {
    pub board: &'a str,
    pub first: u64,
    pub count: u64,
    pub scores: Scores<'a>,
    pub names: Option<&'a [String]>,
}

fn enc(e: impl std::fmt::Display) -> ClientError {
    ClientError::Protocol(format!("cannot encode: {e}"))
}

impl Params for EntryBatch<'_> {
    fn write_params(&self, buf: &mut Vec<u8>) -> Result<(), ClientError> {
        use rmp::encode::*;
        buf.reserve(self.count as usize * 32 + 64);
        write_array_len(buf, 2).map_err(enc)?;
        write_str(buf, self.board).map_err(enc)?;
        write_array_len(buf, self.count as u32).map_err(enc)?;
        let mut id = [0u8; 24];
        for i in self.first..self.first + self.count {
            let name = self.names.map(|n| n[i as usize].as_str());
            // fixmap 2 (3 with a name), fixstr "member", the id, fixstr
            // "score", float 64[, fixstr "name", the name].
            buf.push(if name.is_some() { 0x83 } else { 0x82 });
            buf.extend_from_slice(b"\xa6member");
            let m = member_id(i, &mut id);
            write_str_len(buf, m.len() as u32).map_err(enc)?;
            buf.extend_from_slice(m);
            buf.extend_from_slice(b"\xa5score\xcb");
            buf.extend_from_slice(&self.scores.get(i).to_be_bytes());
            if let Some(name) = name {
                buf.extend_from_slice(b"\xa4name");
                write_str(buf, name).map_err(enc)?;
            }
        }
        Ok(())
    }
}

/// Fails on a per-entry error inside a `submit_many` result (an item
/// `{member, error}`): its key `error` appears nowhere in a successful
/// result, so a byte search finds it without decoding the result.
pub fn check_submit_many(r: &RawResponse) -> Result<()> {
    const KEY: &[u8] = b"\xa5error";
    let b = r.result_bytes();
    let mut from = 0;
    while let Some(k) = b[from..].iter().position(|&x| x == KEY[0]) {
        let at = from + k;
        if b[at..].starts_with(KEY) {
            let v = r.value().map_err(|e| anyhow!("{e}"))?;
            bail!("submit_many refused an entry: {v}");
        }
        from = at + 1;
    }
    Ok(())
}

/// Which podium method loads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Method {
    SubmitMany,
    Import,
}

impl Method {
    /// The RPC method's name.
    pub fn name(self) -> &'static str {
        match self {
            Method::SubmitMany => "submit_many",
            Method::Import => "import",
        }
    }
}

/// A bulk load: members `m0..m{n-1}` with `scores` into `board` (a
/// sorted-set key for Redis), `batch` entries a request, `depth` requests
/// in flight on one connection.
pub struct Load<'a> {
    pub board: &'a str,
    pub n: u64,
    pub batch: u64,
    pub depth: usize,
    pub scores: Scores<'a>,
}

/// Loads into podium with `method` calls; returns the time from the first
/// request to the last answer.
pub async fn podium(
    c: &Client,
    method: Method,
    load: &Load<'_>,
    pb: &ProgressBar,
) -> Result<Duration> {
    podium_named(c, method, load, None, pb).await
}

/// [`podium`], member `m{i}` named `names[i]` when given.
pub async fn podium_named(
    c: &Client,
    method: Method,
    load: &Load<'_>,
    names: Option<&[String]>,
    pb: &ProgressBar,
) -> Result<Duration> {
    if let Some(names) = names {
        if (names.len() as u64) < load.n {
            bail!("{} names for {} members", names.len(), load.n);
        }
    }
    let &Load {
        board,
        n,
        batch,
        depth,
        scores,
    } = load;
    let name = method.name();
    let check = |r: Result<RawResponse, ClientError>, count: u64| -> Result<()> {
        let r = r.with_context(|| format!("{name} on {board}"))?;
        match method {
            Method::SubmitMany => check_submit_many(&r)?,
            Method::Import => {
                let out: podium_client::ImportResult = r.decode()?;
                if out.failed > 0 {
                    bail!(
                        "import refused {} entries: {:?}",
                        out.failed,
                        out.errors.first()
                    );
                }
            }
        }
        pb.inc(count);
        Ok(())
    };
    let start = Instant::now();
    let mut w: Window<Counted<ResponseFuture>> = Window::new(depth);
    let mut first = 0;
    while first < n {
        let count = batch.min(n - first);
        let f = c.call_raw(
            name,
            &EntryBatch {
                board,
                first,
                count,
                scores,
                names,
            },
        );
        if let Some((r, k)) = w.push(Counted(f, count)).await {
            check(r, k)?;
        }
        first += count;
    }
    for (r, k) in w.drain().await {
        check(r, k)?;
    }
    Ok(start.elapsed())
}

/// A call (an RPC answer or a spawned Redis command) and how many entries
/// it carries, so a window's output says how far the load got.
pub struct Counted<F>(F, u64);

impl<F> Counted<F> {
    pub fn new(call: F, entries: u64) -> Counted<F> {
        Counted(call, entries)
    }
}

impl<F: std::future::Future + Unpin> std::future::Future for Counted<F> {
    type Output = (F::Output, u64);
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let k = self.1;
        std::pin::Pin::new(&mut self.0).poll(cx).map(|r| (r, k))
    }
}

/// `ZADD key score m{i} …` for members `first..first+count`.
pub fn zadd(key: &str, first: u64, count: u64, scores: Scores<'_>) -> redis::Cmd {
    let mut cmd = redis::cmd("ZADD");
    cmd.arg(key);
    let mut id = [0u8; 24];
    for i in first..first + count {
        cmd.arg(scores.get(i)).arg(member_id(i, &mut id));
    }
    cmd
}

/// Loads into Redis with ZADD commands; returns the time from the first
/// command to the last answer.
pub async fn redis(
    con: &MultiplexedConnection,
    load: &Load<'_>,
    pb: &ProgressBar,
) -> Result<Duration> {
    let &Load {
        board: key,
        n,
        batch,
        depth,
        scores,
    } = load;
    let start = Instant::now();
    let mut w = Window::new(depth);
    let mut first = 0;
    let check = |r: Result<Result<i64, redis::RedisError>, tokio::task::JoinError>,
                 count: u64|
     -> Result<()> {
        r.context("a ZADD task failed")?
            .with_context(|| format!("ZADD {key}"))?;
        pb.inc(count);
        Ok(())
    };
    while first < n {
        let count = batch.min(n - first);
        let cmd = zadd(key, first, count, scores);
        let mut con = con.clone();
        // Spawned so the command is sent now, not when awaited.
        let task = tokio::spawn(async move { cmd.query_async::<i64>(&mut con).await });
        if let Some(r) = w.push(Counted(task, count)).await {
            check(r.0, r.1)?;
        }
        first += count;
    }
    for r in w.drain().await {
        check(r.0, r.1)?;
    }
    Ok(start.elapsed())
}

/// A Redis connection for the scenario's client runtime.
pub async fn redis_connect(url: &str) -> Result<MultiplexedConnection> {
    let client = redis::Client::open(url).context("redis URL")?;
    client
        .get_multiplexed_async_connection()
        .await
        .with_context(|| format!("cannot connect to Redis at {url}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmpv::Value;

    #[test]
    fn entry_batches_encode_as_podium_expects() {
        let scores = [1.5, -2.0, f64::INFINITY];
        let mut buf = Vec::new();
        EntryBatch {
            board: "b",
            first: 0,
            count: 3,
            scores: Scores::Given(&scores),
            names: None,
        }
        .write_params(&mut buf)
        .unwrap();
        let v = rmpv::decode::read_value(&mut buf.as_slice()).unwrap();
        let want = Value::Array(vec![
            "b".into(),
            Value::Array(
                (0..3)
                    .map(|i| {
                        Value::Map(vec![
                            ("member".into(), format!("m{i}").into()),
                            ("score".into(), scores[i].into()),
                        ])
                    })
                    .collect(),
            ),
        ]);
        assert_eq!(v, want);
        let mut buf = Vec::new();
        EntryBatch {
            board: "b",
            first: 10,
            count: 1,
            scores: Scores::Sequential,
            names: None,
        }
        .write_params(&mut buf)
        .unwrap();
        let v = rmpv::decode::read_value(&mut buf.as_slice()).unwrap();
        assert_eq!(v[1][0]["member"], Value::from("m10"));
        assert_eq!(v[1][0]["score"], Value::from(10.0));
        let names = ["Zoé Quark".to_string(), "Al".to_string()];
        let mut buf = Vec::new();
        EntryBatch {
            board: "b",
            first: 1,
            count: 1,
            scores: Scores::Sequential,
            names: Some(&names),
        }
        .write_params(&mut buf)
        .unwrap();
        let v = rmpv::decode::read_value(&mut buf.as_slice()).unwrap();
        assert_eq!(
            v[1][0],
            Value::Map(vec![
                ("member".into(), "m1".into()),
                ("score".into(), 1.0.into()),
                ("name".into(), "Al".into()),
            ])
        );
    }
}
