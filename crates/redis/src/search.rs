//! Search on Redis: the query parsed here with the engine's parser
//! against the board's search fields, answered by the script from the
//! board's word sets, which are built in chunks on its first search.

use podium_core::api::{ranking_str, SearchOut};
use podium_core::error::{ApiError, Code};
use podium_core::ops::Search;
use podium_engine::search::{parse, QToken, SearchError};

use crate::args::flag;
use crate::config::config_of;
use crate::reply::{arr, int, protocol, ranked_entry, text};
use crate::sorted::ranking_keys;
use crate::RedisBackend;

/// Whether a query needs each candidate checked against its words. The
/// sets, scored by how many of a member's words each holds, answer every
/// query whose words match a laminar family of word sets (see the script's
/// `search`): any query without a field restriction. A `field:` word on a
/// board with several search fields (the parser drops the restriction on
/// a board with one) matches a set that overlaps others without nesting.
fn needs_verify(toks: &[QToken]) -> bool {
    toks.iter().any(|t| t.field.is_some())
}

impl RedisBackend {
    /// Builds the search sets of `board` (its first search; see the
    /// script's `index`): one script run per chunk of members, so a big
    /// board does not hold Redis for seconds, while writes from any node
    /// keep the members they touch indexed.
    async fn build_index(&self, board: &str) -> Result<(), ApiError> {
        const CHUNK: &str = "1000";
        // Distinct across builders (nodes, calls): process, clock, count.
        static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let fresh = || {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            format!("{}.{nanos}.{n}", std::process::id())
        };
        let (mut token, mut cursor) = (fresh(), "0".to_string());
        let mut restarts = 0;
        loop {
            let a = arr(self
                .call(board, "index", [token.as_str(), cursor.as_str(), CHUNK])
                .await?)?;
            match a.first().and_then(text).as_deref() {
                Some("done") => return Ok(()),
                Some("more") if a.len() == 3 => {
                    cursor = text(&a[1]).ok_or_else(|| protocol("index cursor"))?;
                    token = text(&a[2]).ok_or_else(|| protocol("index token"))?;
                }
                // The search fields changed under the build.
                Some("restart") if restarts < 5 => {
                    restarts += 1;
                    (token, cursor) = (fresh(), "0".to_string());
                }
                Some("restart") => return Err(ApiError::new(
                    Code::StorageUnavailable,
                    "the board's search fields kept changing while its index was built; try again",
                )),
                _ => return Err(protocol("index")),
            }
        }
    }

    /// `search`: a page of the members matching `query`, best first.
    pub(crate) async fn search_board(&self, req: &Search) -> Result<SearchOut, ApiError> {
        req.check()?;
        let (board, query, with_data) = (req.board.as_str(), req.query.as_str(), req.with_data);
        let (limit, offset) = (req.limit(), req.offset());
        // The query is parsed here, with the engine's parser, against the
        // board's search fields; the script refuses (`stale`) if they
        // changed in between, and the search starts again.
        for _ in 0..5 {
            let (info, _) = self.info_raw(board).await?;
            let fields = config_of(&info)?.search_fields;
            let engine_err = |e: SearchError| ApiError::from(podium_engine::Error::from(e));
            if fields.is_empty() {
                return Err(engine_err(SearchError::Disabled));
            }
            let toks = match parse(query, &fields) {
                // A query with no word is well formed and matches nothing.
                Err(SearchError::EmptyQuery) => {
                    return Ok(SearchOut {
                        board: board.to_string(),
                        ranking: config_of(&info)?.ranking.as_str().to_string(),
                        query: query.to_string(),
                        total: 0,
                        offset,
                        limit,
                        entries: Vec::new(),
                    })
                }
                parsed => parsed.map_err(engine_err)?,
            };
            let mut args = vec![
                fields.join(" "),
                offset.to_string(),
                limit.to_string(),
                flag(with_data).into(),
                flag(needs_verify(&toks)).into(),
            ];
            for t in toks {
                let field = t.field.map_or(-1, i64::from).to_string();
                args.extend([t.word, flag(t.prefix).into(), field]);
            }
            let mut a = arr(self.call(board, "search", args).await?)?;
            match (a.len(), a.first().and_then(text).as_deref()) {
                (1, Some("stale")) => continue,
                (1, Some("unindexed")) => {
                    self.build_index(board).await?;
                    continue;
                }
                _ => {}
            }
            if a.len() < 2 {
                return Err(protocol("search"));
            }
            let total = int(&a[0])?;
            let (ranking, layout) = ranking_keys(a.get(1))?;
            let mut entries = Vec::with_capacity(a.len() - 2);
            for item in a.drain(2..) {
                let f = arr(item)?;
                if f.len() < 6 {
                    return Err(protocol("search entry"));
                }
                let member = text(&f[0]).ok_or_else(|| protocol("member"))?;
                entries.push(ranked_entry(&f, member, ranking, layout.as_deref(), with_data)?.1);
            }
            return Ok(SearchOut {
                board: board.to_string(),
                ranking: ranking_str(ranking).to_string(),
                query: query.to_string(),
                total,
                offset,
                limit,
                entries,
            });
        }
        Err(ApiError::new(
            Code::StorageUnavailable,
            "the board's search fields kept changing during the search; try again",
        ))
    }
}
