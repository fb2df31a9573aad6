//! MessagePack forms of the API's results written straight from the
//! engine's entries, byte for byte what `rmp_serde` writes for the DTOs of
//! [`crate::api`]: an entry ([`encode_entry_ref`]), a chunk of a streamed
//! result ([`visit_chunk`]) and a member's JSON `data` ([`json`]). The
//! MessagePack-RPC frontend answers with them, and podium-bench times them
//! in process; the DTO path stays the reference their tests compare with.

use crate::backend::InPlace;
use crate::error::ApiError;

pub mod json;

/// Encoded entries and how many.
pub struct Chunk {
    pub bytes: Vec<u8>,
    pub count: usize,
}

/// A chunk of entries read in place by [`InPlace::visit_entries`], as a
/// MessagePack-RPC connection streams them (and podium-bench's
/// export-encode harness times them).
pub fn visit_chunk(
    svc: &dyn InPlace,
    board: &str,
    skip: u64,
    want: usize,
    from_worst: bool,
    with_data: bool,
) -> Result<Chunk, ApiError> {
    // An entry without a name or data takes 24 bytes plus its member id
    // and rank: room for ids of ~20 bytes, so the chunk is not regrown
    // (and copied) as it fills. Entries with `data` can be 100× that: the
    // first one sizes the rest (an eighth spare for the variation).
    const GUESS: usize = 56;
    let mut bytes = Vec::with_capacity(want * GUESS);
    let mut first = true;
    let count = svc.visit_entries(board, skip as usize, want, from_worst, &mut |e| {
        encode_entry_ref(&mut bytes, &e, with_data);
        if first && bytes.len() > GUESS {
            bytes.reserve(bytes.len() * (want - 1) / 8 * 9);
        }
        first = false;
    })?;
    Ok(Chunk { bytes, count })
}

/// One entry as `rmp_serde` encodes [`crate::api::EntryOut`] (and, with
/// `with_data`, `export`'s lines), byte for byte, written straight from the
/// board: a streamed export of millions of entries then costs no
/// allocation per entry and no trip through the DTOs. The fixed parts (the
/// map header, the field names, the float marker) are constant bytes and
/// an ASCII member id of up to 31 bytes is copied behind a one-byte header,
/// the common entry costing a handful of copies; `data` is transcoded from
/// its JSON text without building a tree ([`json`]).
#[inline(always)]
pub fn encode_entry_ref(out: &mut Vec<u8>, e: &podium_engine::EntryRef<'_>, with_data: bool) {
    let data = e.data.filter(|_| with_data);
    if e.scores.is_some() {
        return encode_entry_scores(out, e, with_data);
    }
    if e.name.is_none() && data.is_none() && encode_bare(out, e.member, e.score, e.rank) {
        return;
    }
    encode_entry_full(out, e, data);
}

/// [`encode_entry_ref`] of an entry of a board with sort keys, through the
/// DTO: its `scores` map follows `score`.
#[inline(never)]
fn encode_entry_scores(out: &mut Vec<u8>, e: &podium_engine::EntryRef<'_>, with_data: bool) {
    // Each name is copied once, straight from the board's keys.
    let named = |s: &podium_engine::Scores| {
        crate::api::NamedScores(
            e.keys
                .iter()
                .zip(s.iter())
                .map(|(k, v)| (k.key.clone(), *v))
                .collect(),
        )
    };
    let o = crate::api::EntryOut {
        member: crate::api::member_str(e.member),
        score: crate::api::Score(e.score),
        scores: e.scores.as_ref().map(named),
        rank: e.rank,
        name: e.name.map(str::to_string),
        data: e
            .data
            .filter(|_| with_data)
            .and_then(|d| serde_json::from_str(d).ok()),
    };
    // Writing into a Vec cannot fail.
    let _ = rmp_serde::encode::write_named(out, &o);
}

/// [`encode_entry_ref`] of any entry; `data` if it is to be written.
#[inline(never)]
fn encode_entry_full(out: &mut Vec<u8>, e: &podium_engine::EntryRef<'_>, data: Option<&str>) {
    use rmp::encode as w;
    let m = e.member;
    out.reserve(m.len() + e.name.map_or(0, str::len) + data.map_or(0, str::len) + 48);
    let head = out.len();
    // A fixmap: at most 5 fields. `data` is counted until it fails to parse.
    out.push(0x80 | (3 + e.name.is_some() as u8 + data.is_some() as u8));
    out.extend_from_slice(b"\xa6member");
    if m.len() < 32 && m.is_ascii() {
        out.push(0xa0 | m.len() as u8);
        out.extend_from_slice(m);
    } else {
        // Writing into a Vec cannot fail.
        let _ = match std::str::from_utf8(m) {
            Ok(m) => w::write_str(out, m),
            Err(_) => w::write_str(out, &String::from_utf8_lossy(m)),
        };
    }
    out.extend_from_slice(b"\xa5score\xcb");
    out.extend_from_slice(&e.score.to_bits().to_be_bytes());
    out.extend_from_slice(b"\xa4rank");
    let r = e.rank;
    if r < 128 {
        out.push(r as u8);
    } else {
        let _ = w::write_uint(out, r);
    }
    if let Some(name) = e.name {
        let _ = w::write_str(out, "name");
        let _ = w::write_str(out, name);
    }
    if let Some(d) = data {
        let key = out.len();
        let _ = w::write_str(out, "data");
        if !json::transcode(d, out) {
            // Text a `Value` would reorder (or not JSON at all): the DTO's
            // own way, which leaves the field out when it does not parse.
            match serde_json::from_str::<serde_json::Value>(d) {
                Ok(v) => {
                    let _ = rmp_serde::encode::write_named(out, &v);
                }
                Err(_) => {
                    out.truncate(key);
                    out[head] -= 1;
                }
            }
        }
    }
}

/// Most bytes [`encode_bare`] writes: map header and `member` key (8), a
/// fixstr of up to 31 bytes (32), `score` and its float 64 (15), `rank`
/// and a uint 64 (14).
const BARE_MAX: usize = 8 + 32 + 15 + 14;

/// [`encode_entry_ref`]'s common case, the bare entry `{member, score,
/// rank}` of an ASCII id shorter than 32 bytes, written with a few
/// fixed-size stores: an export of millions of entries is mostly these,
/// and byte-by-byte `Vec` pushes and a `memcpy` call per field cost more
/// than the board walk that finds the entry. False (nothing written) for
/// any other id.
#[inline(always)]
fn encode_bare(out: &mut Vec<u8>, m: &[u8], score: f64, rank: u64) -> bool {
    let n = m.len();
    if n >= 32 {
        return false;
    }
    out.reserve(BARE_MAX);
    let start = out.len();
    // SAFETY: `reserve` left at least BARE_MAX writable bytes at `p`, and
    // every store below lands in `p..p + BARE_MAX` (offsets are summed in
    // BARE_MAX's doc); `copy_short` reads only `m`'s `n` bytes. The length
    // is set only once every byte up to it has been written.
    unsafe {
        let p = out.as_mut_ptr().add(start);
        p.cast::<[u8; 8]>().write_unaligned(*b"\x83\xa6member");
        p.add(8).write(0xa0 | n as u8);
        if !copy_short(m.as_ptr(), p.add(9), n) {
            return false;
        }
        let q = p.add(9 + n);
        // The marker's eighth byte is overwritten by the score's first.
        q.cast::<[u8; 8]>().write_unaligned(*b"\xa5score\xcb\0");
        q.add(7)
            .cast::<[u8; 8]>()
            .write_unaligned(score.to_bits().to_be_bytes());
        q.add(15)
            .cast::<[u8; 8]>()
            .write_unaligned(*b"\xa4rank\0\0\0");
        // rmp's smallest encoding of an unsigned integer.
        let r = q.add(20);
        let tail = if rank < 128 {
            r.write(rank as u8);
            1
        } else if rank < 1 << 8 {
            r.cast::<[u8; 2]>().write_unaligned([0xcc, rank as u8]);
            2
        } else if rank < 1 << 16 {
            r.write(0xcd);
            r.add(1)
                .cast::<[u8; 2]>()
                .write_unaligned((rank as u16).to_be_bytes());
            3
        } else if rank < 1 << 32 {
            r.write(0xce);
            r.add(1)
                .cast::<[u8; 4]>()
                .write_unaligned((rank as u32).to_be_bytes());
            5
        } else {
            r.write(0xcf);
            r.add(1)
                .cast::<[u8; 8]>()
                .write_unaligned(rank.to_be_bytes());
            9
        };
        out.set_len(start + 9 + n + 20 + tail);
    }
    true
}

/// Copies `n` (< 32) bytes from `src` to `dst` with at most four
/// overlapping word loads and stores (no `memcpy` call for a dozen bytes),
/// and tells whether they are all ASCII, seen from the same loads.
///
/// # Safety
/// `src..src + n` is readable, `dst..dst + n` writable.
#[inline(always)]
unsafe fn copy_short(src: *const u8, dst: *mut u8, n: usize) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    unsafe {
        if n >= 16 {
            let a = src.cast::<[u64; 2]>().read_unaligned();
            let b = src.add(n - 16).cast::<[u64; 2]>().read_unaligned();
            dst.cast::<[u64; 2]>().write_unaligned(a);
            dst.add(n - 16).cast::<[u64; 2]>().write_unaligned(b);
            (a[0] | a[1] | b[0] | b[1]) & HIGH == 0
        } else if n >= 8 {
            let a = src.cast::<u64>().read_unaligned();
            let b = src.add(n - 8).cast::<u64>().read_unaligned();
            dst.cast::<u64>().write_unaligned(a);
            dst.add(n - 8).cast::<u64>().write_unaligned(b);
            (a | b) & HIGH == 0
        } else if n >= 4 {
            let a = src.cast::<u32>().read_unaligned();
            let b = src.add(n - 4).cast::<u32>().read_unaligned();
            dst.cast::<u32>().write_unaligned(a);
            dst.add(n - 4).cast::<u32>().write_unaligned(b);
            (a | b) & HIGH as u32 == 0
        } else {
            let mut all = 0u8;
            for i in 0..n {
                let c = src.add(i).read();
                dst.add(i).write(c);
                all |= c;
            }
            all < 0x80
        }
    }
}
