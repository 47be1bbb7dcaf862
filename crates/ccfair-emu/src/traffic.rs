//! ccfair's own bulk sender and receiver, one pair per flow, each a thread inside its host's
//! network namespace.
//!
//! The sender sets TCP_CONGESTION on its socket to the flow's algorithm before connecting,
//! writes from its start time until its stop time (or until `size` bytes), and samples
//! TCP_INFO and TCP_CC_INFO on its own socket every `sample_interval` on the grid
//! t0 + k x interval. The receiver reads as fast as the kernel delivers and records the bytes
//! delivered to the application on the same grid and at the edges of the measurement window.
//! Both use CLOCK_MONOTONIC, which all namespaces share.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;

use crate::bpfcc::{self, Algorithm};
use crate::forwarder::Control;
use crate::sys;
use crate::tcpinfo::{BbrInfo, Sample};

/// Write chunk of the sender and read buffer of the receiver.
const IO_CHUNK: usize = 256 * 1024;
/// How often threads waiting for something look at the stop flag.
const POLL_SLICE_NS: u64 = 2_000_000;

/// Setup progress, reported to the thread that drives the run.
#[derive(Debug)]
pub enum Progress {
    /// A receiver listens.
    Listening(usize),
    /// A sender's socket exists with its congestion control set.
    Ready(usize),
    Failed(String),
}

/// What a flow needs to know about the run's timeline (ns, relative to t0).
#[derive(Clone, Copy, Debug)]
pub struct Timeline {
    pub sample_interval_ns: u64,
    pub duration_ns: u64,
    pub measure_start_ns: u64,
    pub measure_end_ns: u64,
}

#[derive(Clone, Debug)]
pub struct SenderPlan {
    pub flow: usize,
    pub netns: String,
    pub thread_name: String,
    pub cca: String,
    /// Set when `cca` is one of ccfair's BPF congestion controls.
    pub bpf: Option<BpfFlow>,
    pub to: SocketAddrV4,
    pub start_ns: u64,
    pub stop_ns: Option<u64>,
    pub size_bytes: Option<u64>,
    pub timer_slack_ns: u64,
    pub priority: u32,
    pub connect_timeout_ns: u64,
}

/// What a sender needs to run one of ccfair's BPF congestion controls on its socket.
#[derive(Clone, Debug)]
pub struct BpfFlow {
    pub algorithm: Algorithm,
    /// The program's socket-storage map (valid for the run).
    pub storage_fd: std::os::fd::RawFd,
    /// Parameters and zero state, written into the socket's storage before connect().
    pub initial_value: Vec<u8>,
}

#[derive(Clone, Debug)]
pub struct ReceiverPlan {
    pub flow: usize,
    pub netns: String,
    pub thread_name: String,
    pub listen: SocketAddrV4,
    pub timer_slack_ns: u64,
    pub priority: u32,
    /// The flow's start (ns after t = 0): its sender connects then.
    pub start_ns: u64,
    /// Give up if nothing connected this long after the flow's start.
    pub accept_timeout_ns: u64,
}

/// One TCP_INFO sample: the grid index k, when it was taken (ns after t0) and its values.
#[derive(Clone, Debug)]
pub struct SenderSample {
    pub k: u64,
    pub t_ns: u64,
    pub sample: Sample,
    /// A BPF algorithm's internals (empty otherwise), under the simulator's column names.
    pub bpf: Vec<(&'static str, f64)>,
}

#[derive(Clone, Debug, Default)]
pub struct SenderOut {
    pub samples: Vec<SenderSample>,
    /// Grid points that passed while the thread was late by a whole interval or more.
    pub missed_samples: u64,
    pub bytes_written: u64,
    /// When the application called connect() and when connect() completed (ns after t0).
    pub connect_ns: Option<u64>,
    pub established_ns: Option<u64>,
    /// Final `tcp_info` values.
    pub total_retrans: u64,
    pub total_rto: u64,
    pub total_rto_recoveries: u64,
    pub data_segs_out: u64,
    pub bytes_retrans: u64,
    pub dsack_dups: u64,
    pub reord_seen: u64,
    pub min_rtt_us: f64,
    /// Mean of the srtt samples (a time average at the sampling interval).
    pub mean_srtt_us: f64,
    /// TcpExt counters of the sender's namespace over the run (end minus start).
    pub netstat: BTreeMap<String, u64>,
    /// A BPF algorithm's counters at the end (the simulator's `summary_counters`).
    pub bpf_counters: Vec<(&'static str, f64)>,
}

/// Bytes delivered to the receiving application at one grid point.
#[derive(Clone, Copy, Debug)]
pub struct Tick {
    pub k: u64,
    pub t_ns: u64,
    pub bytes: u64,
}

#[derive(Clone, Debug, Default)]
pub struct ReceiverOut {
    pub ticks: Vec<Tick>,
    pub missed_ticks: u64,
    pub bytes_total: u64,
    pub bytes_at_measure_start: u64,
    pub bytes_at_measure_end: u64,
    /// When the sender's FIN arrived (ns after t0), for flows with a size.
    pub eof_ns: Option<u64>,
}

fn wait_t0(ctl: &Control) -> Result<u64, String> {
    loop {
        if ctl.stopped() {
            return Err("stopped before the start".into());
        }
        if let Some(t0) = ctl.t0() {
            return Ok(t0);
        }
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
}

fn enter(netns: &str, thread_name: &str, slack_ns: u64, priority: u32) -> Result<(), String> {
    sys::set_thread_name(thread_name);
    let _ = sys::set_timer_slack(slack_ns);
    if priority > 0 {
        // Best effort: without CAP_SYS_NICE the thread keeps the ordinary scheduler.
        let _ = sys::set_fifo(priority);
    }
    let path = Path::new("/run/netns").join(netns);
    sys::enter_netns(&path).map_err(|e| format!("entering namespace {netns}: {e}"))
}

/// (name -> value) of the `TcpExt:` lines of /proc/thread-self/net/netstat: the counters of
/// the calling thread's network namespace (proc(5)).
fn read_netstat() -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let Ok(text) = std::fs::read_to_string("/proc/thread-self/net/netstat") else {
        return out;
    };
    let lines: Vec<&str> = text.lines().collect();
    for pair in lines.chunks(2) {
        if let [names, values] = pair {
            if names.starts_with("TcpExt:") && values.starts_with("TcpExt:") {
                for (n, v) in names
                    .split_whitespace()
                    .zip(values.split_whitespace())
                    .skip(1)
                {
                    if let Ok(v) = v.parse() {
                        out.insert(n.to_string(), v);
                    }
                }
            }
        }
    }
    out
}

/// The receiver of one flow: listen before t = 0; from t = 0 on, accept the connection
/// when it comes (the sender connects at its flow's start) and count delivered bytes on the
/// grid.
pub fn receiver(
    plan: ReceiverPlan,
    tl: Timeline,
    ctl: Arc<Control>,
    progress: mpsc::Sender<Progress>,
) -> Result<ReceiverOut, String> {
    let f = plan.flow;
    let setup = || -> Result<TcpListener, String> {
        enter(
            &plan.netns,
            &plan.thread_name,
            plan.timer_slack_ns,
            plan.priority,
        )?;
        let listener = TcpListener::bind(plan.listen)
            .map_err(|e| format!("flows[{f}]: listen on {}: {e}", plan.listen))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("flows[{f}]: {e}"))?;
        Ok(listener)
    };
    let listener = match setup() {
        Ok(l) => l,
        Err(e) => {
            let _ = progress.send(Progress::Failed(e.clone()));
            return Err(e);
        }
    };
    let _ = progress.send(Progress::Listening(f));
    let t0 = wait_t0(&ctl)?;
    let accept_deadline = t0 + plan.start_ns + plan.accept_timeout_ns;

    let iv = tl.sample_interval_ns;
    let end = t0 + tl.duration_ns;
    let mut out = ReceiverOut {
        ticks: vec![Tick {
            k: 0,
            t_ns: 0,
            bytes: 0,
        }],
        ..Default::default()
    };
    let mut k = 1u64;
    let mut measure_start_done = tl.measure_start_ns == 0;
    let mut measure_end_done = false;
    let mut eof = false;
    let mut stream: Option<TcpStream> = None;
    let mut buf = vec![0u8; IO_CHUNK];
    loop {
        if ctl.stopped() {
            return Err("stopped".into());
        }
        if stream.is_none() {
            match listener.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(true)
                        .map_err(|e| format!("flows[{f}]: {e}"))?;
                    stream = Some(s);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if sys::monotonic_ns() > accept_deadline {
                        return Err(format!(
                            "flows[{f}]: no connection reached {} in time",
                            plan.listen
                        ));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("flows[{f}]: accept: {e}")),
            }
        }
        if let (Some(s), false) = (stream.as_mut(), eof) {
            loop {
                match s.read(&mut buf) {
                    Ok(0) => {
                        eof = true;
                        out.eof_ns = Some(sys::monotonic_ns().saturating_sub(t0));
                        break;
                    }
                    Ok(n) => out.bytes_total += n as u64,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(format!("flows[{f}]: read: {e}")),
                }
            }
        }
        let now = sys::monotonic_ns();
        if !measure_start_done && now >= t0 + tl.measure_start_ns {
            out.bytes_at_measure_start = out.bytes_total;
            measure_start_done = true;
        }
        if !measure_end_done && now >= t0 + tl.measure_end_ns {
            out.bytes_at_measure_end = out.bytes_total;
            measure_end_done = true;
        }
        if k * iv <= tl.duration_ns && now >= t0 + k * iv {
            out.ticks.push(Tick {
                k,
                t_ns: now - t0,
                bytes: out.bytes_total,
            });
            k += 1;
            while k * iv <= tl.duration_ns && t0 + k * iv <= now {
                k += 1;
                out.missed_ticks += 1;
            }
        }
        if now >= end && k * iv > tl.duration_ns && measure_end_done {
            break;
        }
        let mut next = end;
        if k * iv <= tl.duration_ns {
            next = next.min(t0 + k * iv);
        }
        if !measure_start_done {
            next = next.min(t0 + tl.measure_start_ns);
        }
        if !measure_end_done {
            next = next.min(t0 + tl.measure_end_ns);
        }
        let timeout = next.saturating_sub(sys::monotonic_ns()).min(POLL_SLICE_NS);
        let fd = match &stream {
            None => listener.as_raw_fd(),
            Some(_) if eof => -1,
            Some(s) => s.as_raw_fd(),
        };
        let mut p = [libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        }];
        sys::ppoll(&mut p, Some(timeout)).map_err(|e| format!("poll: {e}"))?;
    }
    Ok(out)
}

/// Where a sender is in its connection's life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Before the flow's start: the socket exists, nothing was sent.
    Waiting,
    /// connect() was called at the start: SYN sent, waiting for the handshake to complete.
    Connecting,
    /// Established: the application writes (until its stop time or its size).
    Writing,
    /// The application is done writing.
    Done,
}

/// The sender of one flow: create the socket with the flow's algorithm before t = 0;
/// connect at the flow's start, as an application starts a transfer (the handshake's RTT
/// is Linux's first sample); then write and sample.
pub fn sender(
    plan: SenderPlan,
    tl: Timeline,
    ctl: Arc<Control>,
    progress: mpsc::Sender<Progress>,
) -> Result<SenderOut, String> {
    let f = plan.flow;
    let setup = || -> Result<TcpStream, String> {
        enter(
            &plan.netns,
            &plan.thread_name,
            plan.timer_slack_ns,
            plan.priority,
        )?;
        let fd = sys::tcp_socket_with_cca(&plan.cca).map_err(|e| {
            format!(
                "flows[{f}].cca: the kernel refused TCP_CONGESTION {:?}: {e}",
                plan.cca
            )
        })?;
        let got = sys::congestion_of(fd.as_raw_fd()).map_err(|e| format!("flows[{f}]: {e}"))?;
        if got != plan.cca {
            return Err(format!(
                "flows[{f}].cca: asked the kernel for {:?}, the socket runs {got:?}",
                plan.cca
            ));
        }
        if let Some(b) = &plan.bpf {
            bpfcc::attach(b.storage_fd, fd.as_raw_fd(), &b.initial_value)
                .map_err(|e| format!("flows[{f}]: {e}"))?;
        }
        Ok(sys::into_stream(fd))
    };
    let mut stream = match setup() {
        Ok(s) => s,
        Err(e) => {
            let _ = progress.send(Progress::Failed(e.clone()));
            return Err(e);
        }
    };
    let netstat_before = read_netstat();
    let _ = progress.send(Progress::Ready(f));
    let t0 = wait_t0(&ctl)?;

    // Linux's own BBR module reports `struct tcp_bbr_info` through TCP_CC_INFO
    // (tcp_bbr.c bbr_get_info); ccfair's BPF programs report through their storage instead.
    let is_bbr = plan.bpf.is_none() && ccfair_cc::bbr::ALGORITHM.linux_name == Some(&plan.cca);
    let fd = stream.as_raw_fd();
    let iv = tl.sample_interval_ns;
    let start = t0 + plan.start_ns;
    let end = t0 + tl.duration_ns;
    let stop_writing = t0 + plan.stop_ns.unwrap_or(tl.duration_ns);
    // First grid point at or after the start, as the simulator samples started flows.
    let mut k = plan.start_ns.div_ceil(iv).max(1);
    let mut out = SenderOut::default();
    let mut phase = Phase::Waiting;
    let buf = vec![0u8; IO_CHUNK];
    let mut srtt_sum = 0.0;
    let mut srtt_n = 0u64;
    loop {
        if ctl.stopped() {
            return Err("stopped".into());
        }
        let now = sys::monotonic_ns();
        if k * iv <= tl.duration_ns && now >= t0 + k * iv {
            let info = sys::tcp_info(fd).map_err(|e| format!("flows[{f}]: TCP_INFO: {e}"))?;
            let bbr: Option<BbrInfo> = if is_bbr {
                sys::bbr_info(fd).map_err(|e| format!("flows[{f}]: TCP_CC_INFO: {e}"))?
            } else {
                None
            };
            let mut sample = Sample::from_info(&info, bbr);
            if sample.srtt_us.is_finite() {
                srtt_sum += sample.srtt_us;
                srtt_n += 1;
            }
            // The algorithm starts at the handshake: no internals while connecting.
            let mut internals = Vec::new();
            if let (Some(b), false) = (&plan.bpf, sample.cca_state == "connecting") {
                let i = bpfcc::read(b.algorithm, b.storage_fd, fd, info.tcpi_snd_mss)
                    .map_err(|e| format!("flows[{f}]: {e}"))?;
                sample.cca_state = i.state;
                internals = i.metrics;
            }
            out.samples.push(SenderSample {
                k,
                t_ns: now - t0,
                sample,
                bpf: internals,
            });
            k += 1;
            while k * iv <= tl.duration_ns && t0 + k * iv <= now {
                k += 1;
                out.missed_samples += 1;
            }
        }
        if now >= end && k * iv > tl.duration_ns {
            break;
        }
        if phase == Phase::Waiting && now >= start {
            out.connect_ns = Some(now - t0);
            sys::connect_start(fd, plan.to)
                .map_err(|e| format!("flows[{f}]: connect to {}: {e}", plan.to))?;
            phase = Phase::Connecting;
        }
        if phase == Phase::Connecting {
            let mut p = [libc::pollfd {
                fd,
                events: libc::POLLOUT,
                revents: 0,
            }];
            if sys::ppoll(&mut p, Some(0)).map_err(|e| format!("poll: {e}"))? > 0 {
                if let Some(e) = sys::so_error(fd).map_err(|e| e.to_string())? {
                    return Err(format!("flows[{f}]: connect to {}: {e}", plan.to));
                }
                out.established_ns = Some(sys::monotonic_ns() - t0);
                phase = Phase::Writing;
            } else if now > start + plan.connect_timeout_ns {
                return Err(format!("flows[{f}]: connecting to {} timed out", plan.to));
            }
        }
        if phase == Phase::Writing && now >= stop_writing {
            phase = Phase::Done;
        }
        if phase == Phase::Writing {
            loop {
                let want = match plan.size_bytes {
                    Some(size) => (size - out.bytes_written).min(IO_CHUNK as u64) as usize,
                    None => IO_CHUNK,
                };
                if want == 0 {
                    let _ = stream.shutdown(Shutdown::Write);
                    phase = Phase::Done;
                    break;
                }
                match stream.write(&buf[..want]) {
                    Ok(n) => out.bytes_written += n as u64,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(format!("flows[{f}]: write: {e}")),
                }
                // Never hold up a due sample behind a long run of writes.
                if k * iv <= tl.duration_ns && sys::monotonic_ns() >= t0 + k * iv {
                    break;
                }
            }
        }
        let mut next = end;
        if k * iv <= tl.duration_ns {
            next = next.min(t0 + k * iv);
        }
        match phase {
            Phase::Waiting => next = next.min(start),
            Phase::Writing => next = next.min(stop_writing),
            Phase::Connecting | Phase::Done => {}
        }
        let timeout = next.saturating_sub(sys::monotonic_ns()).min(POLL_SLICE_NS);
        let mut p = [libc::pollfd {
            fd: if matches!(phase, Phase::Connecting | Phase::Writing) {
                fd
            } else {
                -1
            },
            events: libc::POLLOUT,
            revents: 0,
        }];
        sys::ppoll(&mut p, Some(timeout)).map_err(|e| format!("poll: {e}"))?;
    }
    if phase == Phase::Waiting || phase == Phase::Connecting {
        return Err(format!(
            "flows[{f}]: the connection to {} was not established before the end of the run",
            plan.to
        ));
    }
    let info = sys::tcp_info(fd).map_err(|e| format!("flows[{f}]: TCP_INFO: {e}"))?;
    if let Some(b) = &plan.bpf {
        out.bpf_counters = bpfcc::read(b.algorithm, b.storage_fd, fd, info.tcpi_snd_mss)
            .map_err(|e| format!("flows[{f}]: {e}"))?
            .counters;
    }
    out.total_retrans = info.tcpi_total_retrans as u64;
    out.total_rto = info.tcpi_total_rto as u64;
    out.total_rto_recoveries = info.tcpi_total_rto_recoveries as u64;
    out.data_segs_out = info.tcpi_data_segs_out as u64;
    out.bytes_retrans = info.tcpi_bytes_retrans;
    out.dsack_dups = info.tcpi_dsack_dups as u64;
    out.reord_seen = info.tcpi_reord_seen as u64;
    out.min_rtt_us = Sample::from_info(&info, None).min_rtt_us;
    out.mean_srtt_us = if srtt_n == 0 {
        f64::NAN
    } else {
        srtt_sum / srtt_n as f64
    };
    let after = read_netstat();
    out.netstat = after
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.saturating_sub(*netstat_before.get(k).unwrap_or(&0)),
            )
        })
        .collect();
    Ok(out)
}
