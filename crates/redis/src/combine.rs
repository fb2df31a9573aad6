//! `combine` on Redis: the sources live in other slots than the
//! destination, so each is read on its own, aggregated here, and the
//! destination replaced in one script run.

use std::collections::HashMap;

use podium_core::api::CombineOut;
use podium_core::error::{ApiError, Code};
use podium_core::ops::Combine;
use podium_engine::Aggregate;

use crate::args::{fmt_score, words_line};
use crate::RedisBackend;

impl RedisBackend {
    /// `combine` (`intersect`: only members on every source) into `dest`.
    pub(crate) async fn combine_into(&self, req: &Combine) -> Result<CombineOut, ApiError> {
        let (dest, intersect) = (req.dest.as_str(), req.intersect);
        let (sources, aggregate) = req.args()?;
        // Each source is read atomically, then the destination is replaced
        // in one script run. Missing sources count as empty, as in Redis.
        let mut boards: Vec<(Vec<(String, f64)>, f64)> = Vec::with_capacity(sources.len());
        for (name, w) in &sources {
            let content = match self.read_window(name, 0, None, false).await {
                Err(e) if e.code == Code::BoardNotFound => Vec::new(),
                // As the engine: the destination exists (a write creates
                // it) and is writable before sort keys are refused.
                Ok(w) if w.layout.is_some() => {
                    self.create(dest, &podium_engine::BoardConfig::default(), true)
                        .await?;
                    if self.info_raw(dest).await?.0.read_only {
                        return Err(podium_engine::Error::ReadOnly(dest.to_string()).into());
                    }
                    return Err(crate::reply::podium_err(dest, "combsort"));
                }
                r => r?
                    .entries
                    .into_iter()
                    .map(|e| (e.member, e.score.0))
                    .collect(),
            };
            boards.push((content, *w));
        }
        let result = aggregate_boards(&boards, aggregate, intersect);
        let args: Vec<String> = result
            .into_iter()
            .flat_map(|(m, x)| {
                let w = words_line(&m);
                [m, fmt_score(x), w]
            })
            .collect();
        self.write(dest, "replace", args).await?;
        let members = self.info_raw(dest).await?.0.members;
        Ok(CombineOut {
            board: dest.to_string(),
            members,
        })
    }
}

/// The weighted sources aggregated, smallest source first: their union,
/// or with `intersect` the members on all of them. A weighted score that
/// is NaN (0 × ∞) counts as 0.
fn aggregate_boards(
    boards: &[(Vec<(String, f64)>, f64)],
    agg: Aggregate,
    intersect: bool,
) -> Vec<(String, f64)> {
    let mut order: Vec<&(Vec<(String, f64)>, f64)> = boards.iter().collect();
    order.sort_by_key(|b| b.0.len());
    let weighted = |w: f64, s: f64| {
        let x = s * w;
        if x.is_nan() {
            0.0
        } else {
            x
        }
    };
    let mut acc: Vec<(String, f64)> = Vec::new();
    if intersect {
        let Some(&&(ref first, w0)) = order.first() else {
            return acc;
        };
        let lookups: Vec<(HashMap<&str, f64>, f64)> = order[1..]
            .iter()
            .map(|b| (b.0.iter().map(|(m, x)| (m.as_str(), *x)).collect(), b.1))
            .collect();
        'members: for (m, s) in first {
            let mut total = weighted(w0, *s);
            for (other, w) in &lookups {
                match other.get(m.as_str()) {
                    Some(x) => total = agg.apply(total, w * x),
                    None => continue 'members,
                }
            }
            acc.push((m.clone(), total));
        }
    } else {
        let mut index: HashMap<String, usize> = HashMap::new();
        for (content, w) in order {
            for (m, s) in content {
                let x = weighted(*w, *s);
                match index.get(m) {
                    Some(&i) => acc[i].1 = agg.apply(acc[i].1, x),
                    None => {
                        index.insert(m.clone(), acc.len());
                        acc.push((m.clone(), x));
                    }
                }
            }
        }
    }
    acc
}
