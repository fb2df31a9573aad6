//! Serialises a board to bytes and rebuilds it, for snapshots. The format
//! (all integers little-endian; docs/engine.md has the table):
//!
//! ```text
//! "PDMB" | version u16 = 1 | config_len u32 | config JSON
//! | next_seq u64 | read_only u8 | count u64
//! | count × ( member_len u16 | member | score bits u64
//!            | (keys − 1) × key bits u64 | seq u64
//!            | flags u8 (1 = name, 2 = data)
//!            | [name_len u32 | name] | [data_len u32 | data] )
//! ```
//!
//! A plain board has one key: its score, a double's bits. A board with
//! `sort` keys (its config lists them) writes its first key's value where
//! a plain board writes the score and each further key's value after it,
//! each as 64 bits: a `float` key's double bits, an `int` key's two's
//! complement. A plain board's bytes are thus what they always were.
//!
//! Entries are written best first, so rebuilding is a bulk load of the
//! tree in O(n), not n inserts. Integrity (checksums) is the storage
//! layer's job; this decoder still refuses anything inconsistent.

use std::io::{self, Read, Write};
use std::sync::Arc;

use super::{tie_mode, Board, Ties};
use crate::config::BoardConfig;
use crate::error::{Error, Result};
use crate::members::{Extra, MAX_MEMBER_BYTES, MAX_NAME_BYTES};
use crate::sort::KeyType;
use crate::tree::{CountedTree, TieBreak};

const MAGIC: &[u8; 4] = b"PDMB";
const VERSION: u16 = 1;

/// What a snapshot needs of a board, copied while writers wait: its entries
/// in order and their records, without the member index, the search index
/// or a dense board's distinct scores (all rebuilt when the snapshot is
/// read). For a plain board that is about three quarters of the board's
/// memory, and much less for a searched one.
///
/// A board stripped of those parts; only the snapshot writer reads it, so
/// the same code writes a board and its image.
pub struct BoardImage(Board);

impl BoardImage {
    /// Writes the board as it was when copied, in the snapshot format.
    pub fn write_snapshot<W: Write>(&self, w: &mut W) -> io::Result<()> {
        self.0.write_snapshot(w)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Board {
    /// Writes the board in the snapshot format.
    pub fn write_snapshot<W: Write>(&self, w: &mut W) -> io::Result<()> {
        let config = serde_json::to_vec(&self.config.to_json()).map_err(io::Error::other)?;
        w.write_all(MAGIC)?;
        w.write_all(&VERSION.to_le_bytes())?;
        w.write_all(&(config.len() as u32).to_le_bytes())?;
        w.write_all(&config)?;
        w.write_all(&self.next_seq.to_le_bytes())?;
        w.write_all(&[self.read_only as u8])?;
        w.write_all(&(self.tree.len() as u64).to_le_bytes())?;
        let members = &self.members;
        for (_, id) in self.tree.iter() {
            let m = members.bytes(id);
            w.write_all(&(m.len() as u16).to_le_bytes())?;
            w.write_all(m)?;
            w.write_all(&members.raw(id).to_le_bytes())?;
            for (j, k) in self.config.sort.iter().enumerate().skip(1) {
                let bits = k.codec().decode(members.key(id, j - 1)).raw();
                w.write_all(&bits.to_le_bytes())?;
            }
            w.write_all(&members.seq(id).to_le_bytes())?;
            let extra = members.extra(id);
            let name = extra.and_then(|e| e.name.as_deref());
            let data = extra.and_then(|e| e.data.as_deref());
            w.write_all(&[name.is_some() as u8 | (data.is_some() as u8) << 1])?;
            for s in [name, data].into_iter().flatten() {
                w.write_all(&(s.len() as u32).to_le_bytes())?;
                w.write_all(s.as_bytes())?;
            }
        }
        Ok(())
    }

    /// The copy a snapshot writes (see [`BoardImage`]).
    pub fn image(&self) -> BoardImage {
        BoardImage(Board {
            config: self.config.clone(),
            tree: self.tree.clone(),
            distinct: None,
            tuples: None,
            first: self.first,
            members: self.members.copy_records(),
            next_seq: self.next_seq,
            read_only: self.read_only,
            search: None,
            journal: Default::default(),
        })
    }

    /// Rebuilds a board written by [`Board::write_snapshot`].
    pub fn read_snapshot<R: Read>(r: &mut R) -> Result<Board> {
        let corrupt = |m: &str| Error::CorruptSnapshot(m.to_string());
        let mut magic = [0u8; 4];
        read_exact(r, &mut magic)?;
        if &magic != MAGIC {
            return Err(corrupt("bad magic"));
        }
        let version = u16::from_le_bytes(array(r)?);
        if version != VERSION {
            return Err(corrupt(&format!("unsupported version {version}")));
        }
        let clen = u32::from_le_bytes(array(r)?) as usize;
        if clen > 1 << 20 {
            return Err(corrupt("config too large"));
        }
        let mut cbytes = vec![0u8; clen];
        read_exact(r, &mut cbytes)?;
        let cjson: serde_json::Value =
            serde_json::from_slice(&cbytes).map_err(|e| corrupt(&format!("config: {e}")))?;
        let config = BoardConfig::from_json(&cjson)?;
        let next_seq = u64::from_le_bytes(array(r)?);
        let [ro] = array::<1, _>(r)?;
        let count = u64::from_le_bytes(array(r)?);
        let mut board = Board::empty(config);
        board.next_seq = next_seq;
        board.read_only = ro != 0;
        // The count is not trusted for the reservation (a damaged one would
        // take memory the budget counts): the vector grows as entries are
        // read, by doubling that costs little next to reading them.
        let mut entries: Vec<(u64, u32)> = Vec::with_capacity(count.min(1 << 16) as usize);
        let mut member = Vec::with_capacity(MAX_MEMBER_BYTES);
        let mut tail = vec![0u64; board.members.stride()];
        for _ in 0..count {
            let mlen = u16::from_le_bytes(array(r)?) as usize;
            if mlen == 0 || mlen > MAX_MEMBER_BYTES {
                return Err(corrupt("member length out of range"));
            }
            member.resize(mlen, 0);
            read_exact(r, &mut member)?;
            let raw = u64::from_le_bytes(array(r)?);
            if !board.first.int && f64::from_bits(raw).is_nan() {
                return Err(corrupt("NaN score"));
            }
            for (c, k) in tail.iter_mut().zip(board.config.sort.iter().skip(1)) {
                let bits = u64::from_le_bytes(array(r)?);
                if k.ty == KeyType::Float && f64::from_bits(bits).is_nan() {
                    return Err(corrupt("NaN key value"));
                }
                *c = k.codec().encode(bits);
            }
            let seq = u64::from_le_bytes(array(r)?);
            let [flags] = array::<1, _>(r)?;
            let mut extra = Extra::default();
            if flags & 1 != 0 {
                extra.name = Some(read_str(r, MAX_NAME_BYTES)?);
            }
            if flags & 2 != 0 {
                extra.data = Some(read_str(r, 1 << 24)?);
            }
            if board.members.find(&member).is_some() {
                return Err(corrupt("duplicate member"));
            }
            let hash = board.members.hash_of(&member);
            let id = board.members.insert_hashed(&member, raw, seq, hash);
            board.members.set_keys(id, &tail);
            board.members.set_extra(id, extra);
            let key = board.key_of_id(id);
            if let Some(&(pk, pid)) = entries.last() {
                let ties = Ties {
                    members: &board.members,
                    mode: tie_mode(&board.config),
                };
                if pk.cmp(&key).then_with(|| ties.tie(pid, id)) != std::cmp::Ordering::Less {
                    return Err(corrupt("entries out of order"));
                }
            }
            entries.push((key, id));
        }
        if let Some(d) = board.distinct.as_mut() {
            let mut runs: Vec<(u64, u32)> = Vec::new();
            for &(k, _) in &entries {
                match runs.last_mut() {
                    Some((pk, n)) if *pk == k => *n += 1,
                    _ => runs.push((k, 1)),
                }
            }
            *d = CountedTree::from_sorted(runs);
        }
        if board.tuples.is_some() {
            for &(k, id) in &entries {
                let t = board.tail(id);
                if let Some(tuples) = board.tuples.as_deref_mut() {
                    tuples.add(k, &t);
                }
            }
        }
        board.tree = CountedTree::from_sorted(entries);
        Ok(board)
    }
}

fn read_exact<R: Read>(r: &mut R, buf: &mut [u8]) -> Result<()> {
    r.read_exact(buf)
        .map_err(|e| Error::CorruptSnapshot(format!("truncated: {e}")))
}

fn array<const N: usize, R: Read>(r: &mut R) -> Result<[u8; N]> {
    let mut b = [0u8; N];
    read_exact(r, &mut b)?;
    Ok(b)
}

fn read_str<R: Read>(r: &mut R, max: usize) -> Result<Arc<str>> {
    let len = u32::from_le_bytes(array(r)?) as usize;
    if len > max {
        return Err(Error::CorruptSnapshot("string too long".into()));
    }
    let mut b = vec![0u8; len];
    read_exact(r, &mut b)?;
    String::from_utf8(b)
        .map(Arc::from)
        .map_err(|_| Error::CorruptSnapshot("string is not UTF-8".into()))
}
