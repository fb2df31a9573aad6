//! RESP requests (`resp::codec::Decoder`): multibulk frames and inline
//! commands.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

use crate::bounded;
use crate::damage::{config, corpus, damage, damaged, pieces, Damage};
use podium_server::resp::codec::{split_args, Args, Decoder, ProtocolError};

/// Feeds `input` in `sizes`-sized pieces, decoding after each, as a
/// connection does: every request until the first refusal (after which the
/// connection closes), and whether bytes were left waiting.
fn run(input: &[u8], sizes: &[usize], authed: bool) -> (Vec<Args>, Option<ProtocolError>) {
    bounded(input.len(), || {
        let mut d = Decoder::new();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for piece in pieces(input, sizes) {
            buf.extend_from_slice(piece);
            loop {
                let before = buf.len();
                match d.decode(&mut buf, authed) {
                    Ok(Some(args)) => {
                        // Progress: a request always takes bytes.
                        assert!(buf.len() < before, "a request took no bytes");
                        out.push(args);
                    }
                    Ok(None) => break,
                    Err(e) => return (out, Some(e)),
                }
            }
        }
        (out, None)
    })
}

fn multibulk(args: &[Vec<u8>]) -> Vec<u8> {
    let mut b = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        b.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        b.extend_from_slice(a);
        b.extend_from_slice(b"\r\n");
    }
    b
}

/// An inline command whose every argument is quoted, each byte as `\xHH`.
fn inline_hex(args: &[Vec<u8>]) -> Vec<u8> {
    let mut b = Vec::new();
    for a in args {
        b.extend_from_slice(b" \"");
        for c in a {
            b.extend_from_slice(format!("\\x{c:02x}").as_bytes());
        }
        b.push(b'"');
    }
    b.extend_from_slice(b"\r\n");
    b
}

fn args_of(v: &[Vec<u8>]) -> Args {
    v.iter().map(|a| Bytes::copy_from_slice(a)).collect()
}

fn requests() -> impl Strategy<Value = Vec<Vec<Vec<u8>>>> {
    let arg = prop::collection::vec(any::<u8>(), 0..40);
    prop::collection::vec(prop::collection::vec(arg, 1..8), 1..5)
}

fn sizes() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..64, 1..8)
}

/// Tokens RESP is made of, so random input reaches past the first check.
fn resp_soup() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        prop::sample::select(vec![
            &b"*"[..],
            b"$",
            b"\r\n",
            b"\r",
            b"\n",
            b"\0",
            b"1",
            b"3",
            b"-1",
            b"0",
            b"\"",
            b"'",
            b"\\x4",
            b"\\",
            b" ",
            b"2147483648",
            b"536870912",
            b"1099511627776",
        ])
        .prop_map(<[u8]>::to_vec),
        prop::collection::vec(any::<u8>(), 1..4),
    ];
    prop::collection::vec(token, 0..48).prop_map(|t| t.concat())
}

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn fuzz_resp_random_bytes(
        input in prop::collection::vec(any::<u8>(), 0..512),
        sizes in sizes(),
        authed in any::<bool>(),
    ) {
        run(&input, &sizes, authed);
    }

    #[test]
    fn fuzz_resp_token_soup(input in resp_soup(), sizes in sizes(), authed in any::<bool>()) {
        run(&input, &sizes, authed);
    }

    #[test]
    fn fuzz_resp_damaged_frames(
        reqs in requests(),
        inline in any::<bool>(),
        damages in prop::collection::vec(damage(), 1..4),
        sizes in sizes(),
        authed in any::<bool>(),
    ) {
        let valid: Vec<u8> = reqs
            .iter()
            .flat_map(|r| if inline { inline_hex(r) } else { multibulk(r) })
            .collect();
        run(&damaged(valid, &damages), &sizes, authed);
    }

    #[test]
    fn fuzz_resp_frames_round_trip(reqs in requests(), sizes in sizes()) {
        let input: Vec<u8> = reqs.iter().flat_map(|r| multibulk(r)).collect();
        let (got, err) = run(&input, &sizes, true);
        prop_assert_eq!(err, None);
        let want: Vec<Args> = reqs.iter().map(|r| args_of(r)).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn fuzz_resp_inline_round_trip(reqs in requests(), sizes in sizes()) {
        let input: Vec<u8> = reqs.iter().flat_map(|r| inline_hex(r)).collect();
        let (got, err) = run(&input, &sizes, true);
        prop_assert_eq!(err, None);
        let want: Vec<Args> = reqs.iter().map(|r| args_of(r)).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn fuzz_resp_split_args_round_trip(
        words in prop::collection::vec("[!#-&(-~]{1,12}", 0..8),
        gaps in prop::collection::vec("[ \t]{1,3}", 8),
    ) {
        let mut line = String::new();
        for (w, g) in words.iter().zip(&gaps) {
            line.push_str(g);
            line.push_str(w);
        }
        let got = split_args(line.as_bytes());
        let want: Vec<Vec<u8>> = words.iter().map(|w| w.as_bytes().to_vec()).collect();
        prop_assert_eq!(got, Some(want));
    }

    #[test]
    fn fuzz_resp_split_args_random(line in prop::collection::vec(any::<u8>(), 0..256)) {
        bounded(line.len(), || split_args(&line));
    }
}

/// A declared length no client could send is refused (or waited for, up
/// to Redis's limits) at once, without reserving it.
#[test]
fn fuzz_resp_huge_declared_lengths_are_cheap() {
    for huge in crate::damage::HUGE_DIGITS {
        for frame in [
            format!("*{huge}\r\n"),
            format!("*1\r\n${huge}\r\n"),
            format!("*2\r\n$1\r\na\r\n${huge}\r\nxy"),
        ] {
            for authed in [true, false] {
                run(frame.as_bytes(), &[usize::MAX], authed);
            }
        }
    }
}

#[test]
fn fuzz_resp_corpus_replays() {
    for (path, input) in corpus("resp") {
        for authed in [true, false] {
            for sizes in [&[usize::MAX][..], &[1], &[7, 3]] {
                let _ = (&path, run(&input, sizes, authed));
            }
        }
    }
}

/// Ensures the damage kinds stay in use (a refactor dropping one would
/// silently weaken the damaged-frame tests).
#[test]
fn fuzz_resp_damage_reaches_lengths() {
    let mut frame = multibulk(&[b"SET".to_vec(), b"k".to_vec()]);
    crate::damage::apply(
        &mut frame,
        &Damage::HugeDigits {
            nth: 1,
            text: "1099511627776",
        },
    );
    assert_eq!(frame, b"*2\r\n$1099511627776\r\nSET\r\n$1\r\nk\r\n");
    let (_, err) = run(&frame, &[usize::MAX], true);
    assert!(err.is_some());
}
