//! The Linux system calls the kernel backend needs, behind safe wrappers.
//!
//! This is the only module of ccfair with `unsafe` code. Every block below passes pointers
//! to buffers it owns, with the buffer's real length, to a system call documented in the
//! man page cited next to it, and checks the return value; nothing else is unsafe.

// System calls through libc have no safe interface: this module is where they get one.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::net::{SocketAddrV4, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

use crate::tcpinfo::{BbrInfo, TcpInfo};

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime(2) writes one timespec into `ts`, which we own.
    let ret = unsafe { libc::clock_gettime(clock, &mut ts) };
    assert_eq!(ret, 0, "clock_gettime({clock}) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_MONOTONIC` in ns: the one clock every thread of a run (forwarder, senders,
/// receivers) reads. It is shared by all network namespaces.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time consumed by the calling thread (user + system), in ns.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time consumed by the whole process, in ns.
pub fn process_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// Move the calling thread into the network namespace bound at `path` (e.g.
/// `/run/netns/NAME`, as `ip netns add` creates it). Only this thread changes namespace
/// (setns(2): "the calling thread"); sockets and TUN devices it creates afterwards belong
/// to that namespace.
pub fn enter_netns(path: &Path) -> io::Result<()> {
    let f = File::open(path)?;
    // SAFETY: setns(2) with a valid fd we own and a namespace type constant.
    check(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) })?;
    Ok(())
}

/// Create a TUN device called `name` in the calling thread's network namespace: L3
/// (`IFF_TUN`), no packet information header (`IFF_NO_PI`), no virtio-net header, so that
/// one read(2) returns exactly one IP packet and one write(2) injects one
/// (Documentation/networking/tuntap.rst). Not persistent: the device disappears when the
/// returned fd is closed, including when the process dies.
pub fn open_tun(name: &str) -> io::Result<OwnedFd> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("TUN name {name:?} must have 1 to 15 bytes"),
        ));
    }
    let path = CString::new("/dev/net/tun").expect("no NUL");
    // SAFETY: open(2) with a NUL-terminated path.
    let fd = check(unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: `fd` was just returned by open(2) and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: an all-zero ifreq is a valid value (name and union are plain bytes).
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    ifr.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes one ifreq, which we own (tuntap.rst).
    check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut ifr) })?;
    Ok(fd)
}

/// One read(2). `Ok(None)` when nothing is ready (`EAGAIN` on a non-blocking fd).
pub fn read_nb(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: read(2) into a buffer we own, with its length.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
            _ => Err(e),
        };
    }
    Ok(Some(n as usize))
}

/// One write(2) of a whole packet (a TUN device takes one packet per write).
pub fn write_packet(fd: RawFd, buf: &[u8]) -> io::Result<()> {
    // SAFETY: write(2) from a buffer we own, with its length.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n as usize != buf.len() {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("short write {n} of {}", buf.len()),
        ));
    }
    Ok(())
}

/// poll(2) with a nanosecond timeout (`ppoll`); `None` waits forever. Returns the number of
/// ready fds; `EINTR` counts as a timeout.
pub fn ppoll(fds: &mut [libc::pollfd], timeout_ns: Option<u64>) -> io::Result<usize> {
    let ts = timeout_ns.map(|ns| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: ppoll(2) on an array we own with its length; a null or owned timespec.
    let n = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            tsp,
            std::ptr::null(),
        )
    };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINTR) {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(n as usize)
}

/// Name the calling thread (at most 15 bytes are kept), so that `ps -L` and
/// /proc/PID/task/TID/comm show which run and role it belongs to.
pub fn set_thread_name(name: &str) {
    let short: String = name.chars().take(15).collect();
    if let Ok(c) = CString::new(short) {
        // SAFETY: prctl(2) PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
        unsafe {
            libc::prctl(libc::PR_SET_NAME, c.as_ptr() as libc::c_ulong, 0, 0, 0);
        }
    }
}

/// Set the calling thread's timer slack (prctl(2) PR_SET_TIMERSLACK): how late the kernel
/// may fire its timeouts to batch wake-ups. The default 50 us would show up as lateness.
pub fn set_timer_slack(ns: u64) -> io::Result<()> {
    // SAFETY: prctl(2) PR_SET_TIMERSLACK takes an integer.
    check(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) })?;
    Ok(())
}

/// Run the calling thread under `SCHED_FIFO` at `priority` (sched(7)): it preempts ordinary
/// threads when it wakes, which keeps its wake-up latency low.
pub fn set_fifo(priority: u32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority as libc::c_int,
    };
    // SAFETY: sched_setscheduler(2) on the calling thread (pid 0) with a param we own.
    check(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) })?;
    Ok(())
}

fn setsockopt_bytes(fd: RawFd, level: libc::c_int, opt: libc::c_int, v: &[u8]) -> io::Result<()> {
    // SAFETY: setsockopt(2) reads `v.len()` bytes from a buffer we own.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            v.as_ptr().cast(),
            v.len() as libc::socklen_t,
        )
    })?;
    Ok(())
}

fn getsockopt_bytes(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    buf: &mut [u8],
) -> io::Result<usize> {
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: getsockopt(2) writes at most `len` bytes into a buffer we own and updates len.
    check(unsafe { libc::getsockopt(fd, level, opt, buf.as_mut_ptr().cast(), &mut len) })?;
    Ok(len as usize)
}

/// A non-blocking TCP socket in the calling thread's network namespace, with the
/// congestion control `cca` set (tcp(7) TCP_CONGESTION) before anything is sent, and
/// Nagle off (a bulk sender writes large chunks; this only matters for the last one).
pub fn tcp_socket_with_cca(cca: &str) -> io::Result<OwnedFd> {
    // SAFETY: socket(2) with constant arguments.
    let fd = check(unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    })?;
    // SAFETY: `fd` was just returned by socket(2) and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    setsockopt_bytes(
        fd.as_raw_fd(),
        libc::IPPROTO_TCP,
        libc::TCP_CONGESTION,
        cca.as_bytes(),
    )?;
    let one: libc::c_int = 1;
    setsockopt_bytes(
        fd.as_raw_fd(),
        libc::IPPROTO_TCP,
        libc::TCP_NODELAY,
        &one.to_ne_bytes(),
    )?;
    Ok(fd)
}

/// The congestion control a socket runs (tcp(7) TCP_CONGESTION, read back).
pub fn congestion_of(fd: RawFd) -> io::Result<String> {
    let mut buf = [0u8; 16];
    let n = getsockopt_bytes(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, &mut buf)?;
    let s = &buf[..n];
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    Ok(String::from_utf8_lossy(&s[..end]).into_owned())
}

/// Start a non-blocking connect(2); completion shows as writability, then [`so_error`].
pub fn connect_start(fd: RawFd, to: SocketAddrV4) -> io::Result<()> {
    let sa = sockaddr_in(to);
    // SAFETY: connect(2) reads one sockaddr_in we own, with its size.
    let ret = unsafe {
        libc::connect(
            fd,
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if ret < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    Ok(())
}

/// The pending error of a socket (`SO_ERROR`), e.g. the outcome of a non-blocking connect.
pub fn so_error(fd: RawFd) -> io::Result<Option<io::Error>> {
    let mut buf = [0u8; 4];
    getsockopt_bytes(fd, libc::SOL_SOCKET, libc::SO_ERROR, &mut buf)?;
    let e = i32::from_ne_bytes(buf);
    Ok((e != 0).then(|| io::Error::from_raw_os_error(e)))
}

fn sockaddr_in(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*a.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

/// Hand a connected socket to the standard library for reads and writes.
pub fn into_stream(fd: OwnedFd) -> TcpStream {
    TcpStream::from(fd)
}

/// `struct tcp_info` of a socket (tcp(7) TCP_INFO). The kernel copies
/// min(our size, its size) bytes, so fields it lacks stay zero.
pub fn tcp_info(fd: RawFd) -> io::Result<TcpInfo> {
    tcp_info_len(fd).map(|(info, _)| info)
}

/// [`tcp_info`] and how many bytes the kernel filled (its own `struct tcp_info` may end
/// before ours: [`TcpInfo::has_received_ce`]).
pub fn tcp_info_len(fd: RawFd) -> io::Result<(TcpInfo, usize)> {
    let mut info = TcpInfo::default();
    let mut len = std::mem::size_of::<TcpInfo>() as libc::socklen_t;
    // SAFETY: getsockopt(2) writes at most `len` bytes into a repr(C) struct of plain
    // integers that we own; any byte pattern is a valid value of it.
    check(unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut TcpInfo).cast(),
            &mut len,
        )
    })?;
    Ok((info, len as usize))
}

/// BBR's `struct tcp_bbr_info` through tcp(7) TCP_CC_INFO (net/ipv4/tcp_bbr.c
/// `bbr_get_info`). `None` when the algorithm reports nothing (Reno, CUBIC).
pub fn bbr_info(fd: RawFd) -> io::Result<Option<BbrInfo>> {
    let mut buf = [0u8; 64];
    let n = getsockopt_bytes(fd, libc::IPPROTO_TCP, libc::TCP_CC_INFO, &mut buf)?;
    Ok(BbrInfo::parse(&buf[..n]))
}
