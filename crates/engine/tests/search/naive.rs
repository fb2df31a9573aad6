//! The naive search: every entry scanned, words folded and matched as
//! documented, sharing no code with the engine's index.

use super::*;

// ============================================================ naive search

/// One fold pass: NFKD, drop non-alphabetic combining marks, lowercase.
pub(crate) fn fold_pass(s: &str) -> String {
    s.nfkd()
        .filter(|&c| !is_combining_mark(c) || c.is_alphabetic())
        .flat_map(char::to_lowercase)
        .collect()
}

pub(crate) fn naive_words(s: &str) -> Vec<String> {
    fold_pass(&fold_pass(s))
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Every word occurrence of an entry: `(field name, word)`.
pub(crate) fn entry_words(e: &Entry, fields: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let data: Option<serde_json::Value> =
        e.data.as_deref().and_then(|d| serde_json::from_str(d).ok());
    for f in fields {
        let text = if f == "name" {
            Some(match &e.name {
                Some(n) => n.to_string(),
                None => String::from_utf8_lossy(&e.member).into_owned(),
            })
        } else {
            match data.as_ref().and_then(|d| d.get(f)) {
                Some(serde_json::Value::String(s)) => Some(s.clone()),
                Some(serde_json::Value::Number(n)) => Some(n.to_string()),
                Some(serde_json::Value::Bool(b)) => Some(b.to_string()),
                _ => None,
            }
        };
        for w in naive_words(text.as_deref().unwrap_or("")) {
            out.push((f.clone(), w));
        }
    }
    out
}

/// A query word as the naive side understands it.
#[derive(Debug, Clone)]
pub(crate) struct NWord {
    pub(crate) word: String,
    pub(crate) prefix: bool,
    pub(crate) field: Option<String>,
}

impl NWord {
    pub(crate) fn matches(&self, field: &str, w: &str) -> bool {
        self.field.as_deref().is_none_or(|f| f == field)
            && if self.prefix {
                w.starts_with(&self.word)
            } else {
                w == self.word
            }
    }
}

/// Brute force: can each query word take a distinct word?
pub(crate) fn assign(q: &[NWord], words: &[(String, String)], used: &mut Vec<bool>) -> bool {
    let Some((first, rest)) = q.split_first() else {
        return true;
    };
    for i in 0..words.len() {
        if !used[i] && first.matches(&words[i].0, &words[i].1) {
            used[i] = true;
            let ok = assign(rest, words, used);
            used[i] = false;
            if ok {
                return true;
            }
        }
    }
    false
}

/// One raw query token, as generated (rendered into the query string).
#[derive(Clone, Debug)]
pub(crate) struct RawTok {
    pub(crate) field: Option<String>,
    pub(crate) text: String,
    pub(crate) quoted: bool,
    pub(crate) star: bool,
}

impl RawTok {
    pub(crate) fn render(&self) -> String {
        let mut s = String::new();
        if let Some(f) = &self.field {
            s.push_str(f);
            s.push(':');
        }
        if self.quoted {
            s.push('"');
            s.push_str(&self.text);
            s.push('"');
        } else {
            s.push_str(&self.text);
            if self.star {
                s.push('*');
            }
        }
        s
    }
}

#[derive(Clone)]
pub(crate) struct Query {
    pub(crate) raw: Vec<RawTok>,
    pub(crate) limit: u64,
    pub(crate) offset: u64,
}

impl Query {
    pub(crate) fn text(&self) -> String {
        self.raw
            .iter()
            .map(RawTok::render)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl fmt::Debug for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Query({:?} limit {} offset {})",
            self.text(),
            self.limit,
            self.offset
        )
    }
}

/// Which error the naive parse expects (by kind), or the query words.
pub(crate) fn naive_parse(q: &Query, fields: &[String]) -> Result<Vec<NWord>, &'static str> {
    if fields.is_empty() {
        return Err("Disabled");
    }
    let mut groups = Vec::new();
    for r in &q.raw {
        let words = naive_words(&r.text);
        if let Some(f) = &r.field {
            if !fields.contains(f) {
                return Err("UnknownField");
            }
            if words.is_empty() {
                return Err("EmptyField");
            }
        }
        if !words.is_empty() {
            groups.push((words, r));
        }
    }
    if groups.is_empty() {
        return Err("EmptyQuery");
    }
    let last = groups.len() - 1;
    let mut out = Vec::new();
    for (i, (words, r)) in groups.into_iter().enumerate() {
        for w in words {
            out.push(NWord {
                word: w,
                prefix: !r.quoted && (r.star || i == last),
                field: r.field.clone(),
            });
        }
    }
    Ok(out)
}

pub(crate) fn error_kind(e: &SearchError) -> &'static str {
    match e {
        SearchError::NotIndexed => "NotIndexed",
        SearchError::Disabled => "Disabled",
        SearchError::EmptyQuery => "EmptyQuery",
        SearchError::UnknownField { .. } => "UnknownField",
        SearchError::EmptyField { .. } => "EmptyField",
        SearchError::TooManyTokens { .. } => "TooManyTokens",
        SearchError::TokenTooLong { .. } => "TokenTooLong",
        SearchError::QueryTooLong { .. } => "QueryTooLong",
        _ => "other",
    }
}

/// The naive answer: the board's whole ranking, filtered.
pub(crate) fn naive_search(b: &Board, q: &Query) -> Result<(Vec<Entry>, u64), &'static str> {
    let fields = &b.config().search_fields;
    let words = match naive_parse(q, fields) {
        // A query with no word is well formed and matches nothing.
        Err("EmptyQuery") => return Ok((Vec::new(), 0)),
        parsed => parsed?,
    };
    let all = if b.is_empty() {
        Vec::new()
    } else {
        b.top(1, b.len() as u64).unwrap().entries
    };
    let hits: Vec<Entry> = all
        .into_iter()
        .filter(|e| {
            let w = entry_words(e, fields);
            assign(&words, &w, &mut vec![false; w.len()])
        })
        .collect();
    let total = hits.len() as u64;
    let page = hits
        .into_iter()
        .skip(q.offset.min(usize::MAX as u64) as usize)
        .take(q.limit.min(usize::MAX as u64) as usize)
        .collect();
    Ok((page, total))
}

/// How many pages each plan gave: `[Intersect, Scan, Level]`, forced and
/// chosen by `Auto` (checked after the runs, so the tests are known to
/// reach every path).
pub(crate) static FORCED: [AtomicUsize; 3] = [const { AtomicUsize::new(0) }; 3];
pub(crate) static AUTO: [AtomicUsize; 3] = [const { AtomicUsize::new(0) }; 3];

pub(crate) fn count_plan(ran: Plan, asked: Plan) {
    let i = match ran {
        Plan::Intersect => 0,
        Plan::Scan => 1,
        _ => 2,
    };
    let table = if asked == Plan::Auto { &AUTO } else { &FORCED };
    table[i].fetch_add(1, AtomicOrdering::Relaxed);
}

fn plans_ran() -> ([usize; 3], [usize; 3]) {
    let get = |t: &[AtomicUsize; 3]| t.each_ref().map(|c| c.load(AtomicOrdering::Relaxed));
    (get(&FORCED), get(&AUTO))
}

/// Whether every plan ran, forced, and the level plan chosen by the
/// automatic planner at least once.
pub(crate) fn every_plan_ran() -> bool {
    let (forced, auto) = plans_ran();
    forced.iter().all(|&n| n > 0) && auto[2] > 0
}

pub(crate) fn assert_every_plan_ran() {
    let (forced, auto) = plans_ran();
    assert!(
        every_plan_ran(),
        "plans run (intersect, scan, level): forced {forced:?}, auto {auto:?}"
    );
}

pub(crate) fn check_query(b: &Board, q: &Query) -> Result<(), TestCaseError> {
    let text = q.text();
    let want = naive_search(b, q);
    let mut pages: Vec<SearchPage> = Vec::new();
    for plan in [Plan::Auto, Plan::Intersect, Plan::Scan, Plan::Level] {
        let opts = SearchOptions {
            limit: q.limit,
            offset: q.offset,
            plan,
        };
        let got = b.search(&text, &opts);
        match (&want, got) {
            (Ok((entries, total)), Ok(page)) => {
                prop_assert_eq!(
                    &page.entries,
                    entries,
                    "{:?} plan {:?} ran {:?}",
                    q,
                    plan,
                    page.plan
                );
                prop_assert_eq!(page.total, *total, "{:?} plan {:?}", q, plan);
                prop_assert_eq!(page.ranking, b.ranking());
                prop_assert_eq!((page.offset, page.limit), (q.offset, q.limit));
                prop_assert!(page.plan != Plan::Auto);
                if plan == Plan::Level && page.plan == Plan::Scan {
                    // No ranked level serves this query: documented fallback.
                } else if plan != Plan::Auto {
                    prop_assert_eq!(page.plan, plan);
                }
                count_plan(page.plan, plan);
                // The in-place page is the same page, field by field.
                let (head, seen) = b
                    .search_with(&text, &opts, |head, entries| {
                        let seen: Vec<Entry> = entries
                            .map(|e| Entry {
                                member: e.member.to_vec(),
                                score: e.score,
                                scores: e.scores,
                                rank: e.rank,
                                name: e.name.map(Into::into),
                                data: e.data.map(Into::into),
                            })
                            .collect();
                        (*head, seen)
                    })
                    .map_err(|e| TestCaseError::fail(format!("{q:?} in place: {e}")))?;
                prop_assert_eq!(&seen, entries, "{:?} plan {:?} visited", q, plan);
                prop_assert_eq!(
                    (head.total, head.offset, head.limit, head.ranking, head.plan),
                    (page.total, page.offset, page.limit, page.ranking, page.plan)
                );
                pages.push(page);
            }
            (Err(kind), Err(e)) => {
                prop_assert_eq!(*kind, error_kind(&e), "{:?}: {}", q, e);
                let in_place = b.search_with(&text, &opts, |_, _| ());
                prop_assert_eq!(in_place.unwrap_err(), e);
            }
            (want, got) => {
                return Err(TestCaseError::fail(format!(
                    "{q:?} plan {plan:?}: expected {:?}, got {:?}",
                    want.as_ref().map(|w| w.1),
                    got.map(|p| p.total)
                )))
            }
        }
    }
    Ok(())
}
