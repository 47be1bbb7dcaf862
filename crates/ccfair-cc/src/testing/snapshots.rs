//! Trajectory snapshots: every registered algorithm runs one fixed, deterministic scenario
//! on [`super::path::Path`] (one flow, 1000 packets/s bottleneck, 40 ms RTT, a buffer of
//! one BDP, 6 s), and its cwnd, ssthresh, pacing rate and state every 50 ms are compared
//! with `snapshots/<algorithm>.txt`. A behaviour change shows up as a diff of that file to
//! review. After a deliberate change, regenerate with
//! `CCFAIR_UPDATE_SNAPSHOTS=1 cargo test -p ccfair-cc snapshots` and commit the diff; a new
//! algorithm needs its file created the same way.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::path::Path;
use super::TestSender;
use crate::ALGORITHMS;

const MS: u64 = 1_000_000;
const UPDATE_VAR: &str = "CCFAIR_UPDATE_SNAPSHOTS";

/// CE-marking threshold of the bottleneck for an algorithm that needs ECN, packets.
const MARK_AT_PKTS: usize = 10;

/// The trajectory of `name` as text: a header, then one line per 50 ms. An algorithm that
/// needs ECN (DCTCP) has it, and the bottleneck marks above [`MARK_AT_PKTS`].
fn trajectory(name: &str) -> String {
    let cc = crate::build(name, &serde_json::Value::Null, 1).expect("a registered algorithm");
    let ecn = cc.needs_ecn();
    let mut tp = crate::TcpSock::new(super::MSS, 10, 1000);
    tp.ecn_ok = ecn;
    let s = TestSender::new(cc, tp);
    let mut path = Path::single(s, 40 * MS, MS, Some(40));
    if ecn {
        path = path.with_ce_marking(MARK_AT_PKTS);
    }
    path.send();
    let mut out = String::new();
    write!(
        out,
        "# {name}: 1 flow, 1000 pkt/s (11.6 Mbit/s of payload), RTT 40 ms, buffer 40 pkts (1 BDP)"
    )
    .unwrap();
    if ecn {
        write!(out, ", ECN, CE above {MARK_AT_PKTS} pkts").unwrap();
    }
    writeln!(out).unwrap();
    writeln!(
        out,
        "# t_ms cwnd ssthresh pacing_Bps delivered lost ca_state state"
    )
    .unwrap();
    for step in 1..=120u64 {
        let t = step * 50 * MS;
        path.run_until(t);
        let (s, tp) = (path.s(), &path.s().tp);
        let ssthresh = if tp.snd_ssthresh == crate::sock::TCP_INFINITE_SSTHRESH {
            "inf".to_string()
        } else {
            tp.snd_ssthresh.to_string()
        };
        let pacing = match tp.pacing_rate_bytes_per_sec {
            u64::MAX => "inf".to_string(),
            r => r.to_string(),
        };
        writeln!(
            out,
            "{} {} {} {} {} {} {} {}",
            t / MS,
            tp.snd_cwnd,
            ssthresh,
            pacing,
            tp.delivered,
            tp.lost,
            tp.ca_state.as_str(),
            s.cc.state_name(tp)
        )
        .unwrap();
    }
    out
}

fn snapshot_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("snapshots")
        .join(format!("{name}.txt"))
}

/// The first line where `want` and `got` differ, for the failure message.
fn first_difference(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let i = (0..w.len().max(g.len()))
        .find(|&i| w.get(i) != g.get(i))
        .unwrap_or(0);
    format!(
        "line {}:\n  snapshot: {}\n  now:      {}",
        i + 1,
        w.get(i).unwrap_or(&"<end>"),
        g.get(i).unwrap_or(&"<end>")
    )
}

#[test]
fn every_algorithm_matches_its_trajectory_snapshot() {
    let update = std::env::var_os(UPDATE_VAR).is_some();
    let mut failures = Vec::new();
    for a in ALGORITHMS {
        let got = trajectory(a.name);
        let file = snapshot_path(a.name);
        if update {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, &got).unwrap();
            continue;
        }
        match std::fs::read_to_string(&file) {
            Ok(want) if want == got => {}
            Ok(want) => failures.push(format!(
                "{}: trajectory changed, {}",
                a.name,
                first_difference(&want, &got)
            )),
            Err(_) => failures.push(format!("{}: no snapshot {}", a.name, file.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "{}\nIf the change is intended, run with {UPDATE_VAR}=1 and review the diff of \
         crates/ccfair-cc/snapshots/.",
        failures.join("\n")
    );
}

#[test]
fn trajectories_are_deterministic() {
    for a in ALGORITHMS {
        assert_eq!(trajectory(a.name), trajectory(a.name), "{}", a.name);
    }
}
