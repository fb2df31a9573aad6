//! How fast the client takes in a large response, without podium: a
//! thread writes a prepared 128 MiB `export`-shaped response on loopback
//! as fast as the socket takes it, and the client frames it (`call_raw`)
//! and decodes it (`decode_export`). Ignored by default (it measures, and
//! asserts nothing about speed); run with
//! `cargo test --release -p podium-client --test throughput -- --ignored --nocapture`.

use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::time::Instant;

use podium_client::{decode_export, Client, Ser};
use rmpv::Value;

/// `[1, msgid, nil, [{member, score, rank}, …]]` of about `bytes`.
fn export_response(msgid: u64, bytes: usize) -> (Vec<u8>, usize) {
    let mut count = 0u32;
    let mut body = Vec::new();
    let mut i = 0u64;
    while body.len() < bytes {
        let e = Value::Map(vec![
            ("member".into(), format!("m{i}").into()),
            ("score".into(), (i as f64 * 1.5).into()),
            ("rank".into(), (i + 1).into()),
        ]);
        rmpv::encode::write_value(&mut body, &e).unwrap();
        count += 1;
        i += 1;
    }
    let mut out = Vec::with_capacity(body.len() + 16);
    rmp::encode::write_array_len(&mut out, 4).unwrap();
    rmp::encode::write_uint(&mut out, 1).unwrap();
    rmp::encode::write_uint(&mut out, msgid).unwrap();
    rmp::encode::write_nil(&mut out).unwrap();
    rmp::encode::write_array_len(&mut out, count).unwrap();
    out.extend_from_slice(&body);
    (out, count as usize)
}

#[test]
#[ignore = "a measurement; run by hand"]
fn large_responses() {
    const SIZE: usize = 128 << 20;
    const REPS: u64 = 5;
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    // One response, its msgid (a positive fixint, byte 2) patched to each
    // request's.
    let (mut resp, n) = export_response(0, SIZE);
    std::thread::spawn(move || {
        let (s, _) = l.accept().unwrap();
        let mut rd = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        while let Ok(req) = rmpv::decode::read_value(&mut rd) {
            resp[2] = req[1].as_u64().unwrap() as u8;
            w.write_all(&resp).unwrap();
        }
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = Client::connect(addr).await.unwrap();
        let t = Instant::now();
        let mut bytes = 0;
        for _ in 0..REPS {
            let r = c.call_raw("export", &Ser(("b",))).await.unwrap();
            bytes += r.message_len();
        }
        let s = t.elapsed().as_secs_f64();
        println!(
            "framed: {REPS} × {:.1} MiB in {s:.3} s = {:.0} MB/s",
            bytes as f64 / REPS as f64 / (1 << 20) as f64,
            bytes as f64 / s / 1e6
        );
        if std::env::var_os("FRAMED_ONLY").is_some() {
            return;
        }
        let t = Instant::now();
        let mut decode_s = 0.0;
        for _ in 0..REPS {
            let r = c.call_raw("export", &Ser(("b",))).await.unwrap();
            let d = Instant::now();
            let entries = decode_export(&r).unwrap();
            decode_s += d.elapsed().as_secs_f64();
            assert_eq!(entries.len(), n);
        }
        let s = t.elapsed().as_secs_f64();
        println!(
            "framed and decoded into {n} entries: {:.0} MB/s (decoding alone {:.0} MB/s)",
            bytes as f64 / s / 1e6,
            bytes as f64 / decode_s / 1e6
        );
    });
}
