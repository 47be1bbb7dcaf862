//! The errors of the kernel backend: [`EmuError`] for a run (configuration, system calls,
//! connections, the run's threads) and [`BpfError`] for ccfair's BPF congestion controls.
//!
//! Every error is one line that names what failed and on what (a field of the
//! configuration, a flow, a namespace, a system call), because it reaches the user as the
//! message of one Python exception (`ccfair.errors.RunError`; a configuration that is not
//! JSON of the right shape is a `SpecError`), mapped in crates/ccfair-py. Errors that come
//! from the system keep the [`io::Error`] (its errno) as their
//! [`source`](std::error::Error::source).
//! All of them end the run: the emulator never retries; the Python backend decides whether a
//! run is attempted again (it does after [`EmuError::HandshakeDisturbed`], see
//! docs/kernel.md).
//!
//! The errors are `Clone` (I/O errors behind an [`Arc`]) because the first failure of a
//! worker thread travels three ways: to the thread that drives the setup, into the run's
//! [`Control`](crate::forwarder::Control) that stops the other threads, and out of the
//! worker's own thread.

use std::io;
use std::net::SocketAddrV4;
use std::sync::Arc;

use ccfair_sim::SimError;

use crate::bpfcc::Algorithm;
use crate::config::SETUP_DISTURBED;

/// Why a run on the kernel backend could not be set up or did not finish.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmuError {
    /// The configuration is not JSON of the [`EmuConfig`](crate::EmuConfig) shape.
    #[error("emulator config: {0}")]
    Config(Arc<serde_json::Error>),
    /// The run spec inside the configuration fails the simulator's own check
    /// (`RunSpec::check`).
    #[error(transparent)]
    Spec(#[from] SimError),
    /// An entry of the configuration contradicts the spec or another entry. `field` names
    /// it (`hosts[1].dev`, `flows[0].port`).
    #[error("{field}: {message}")]
    Invalid {
        /// Path of the entry in the configuration.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A system call failed. `context` says which and on what (`flows[0]: TCP_INFO`,
    /// `namespace ccf-1a2b-0-h1`); the errno is in `source`.
    #[error("{context}: {source}")]
    Os {
        /// The call and its object, as the message's prefix.
        context: String,
        /// The error the system returned.
        #[source]
        source: Arc<io::Error>,
    },
    /// iproute2's `ip` could not be started.
    #[error("running ip: {0} (is iproute2 installed?)")]
    IpMissing(#[source] Arc<io::Error>),
    /// `ip -n NETNS -batch -` (a host's address and route) exited with an error.
    #[error("ip -n {netns} failed: {stderr}")]
    IpFailed {
        /// The namespace the script ran in.
        netns: String,
        /// What `ip` printed on stderr, trimmed.
        stderr: String,
    },
    /// The kernel refused to set a flow's congestion control on its socket (tcp(7)
    /// TCP_CONGESTION): the module is not loaded or not allowed in the namespace.
    #[error("flows[{flow}].cca: the kernel refused TCP_CONGESTION {cca:?}: {source}")]
    CcaRefused {
        /// The flow's index in the spec.
        flow: usize,
        /// The Linux name asked for.
        cca: String,
        /// The error setsockopt(2) returned.
        #[source]
        source: Arc<io::Error>,
    },
    /// A flow's socket runs another congestion control than the one set on it.
    #[error("flows[{flow}].cca: asked the kernel for {asked:?}, the socket runs {got:?}")]
    CcaMismatch {
        /// The flow's index in the spec.
        flow: usize,
        /// The Linux name set with TCP_CONGESTION.
        asked: String,
        /// The name TCP_CONGESTION reads back.
        got: String,
    },
    /// The threads of the run did not all report a setup step (listening, socket created)
    /// within the connect timeout plus 2 s.
    #[error("timed out waiting for {waiting_for}")]
    SetupTimeout {
        /// The step, e.g. "the receivers to listen".
        waiting_for: &'static str,
    },
    /// No connection reached a flow's receiver within the connect timeout (plus 1 s) after
    /// the flow's start.
    #[error("flows[{flow}]: no connection reached {listen} in time")]
    NoConnection {
        /// The flow's index in the spec.
        flow: usize,
        /// The receiver's address.
        listen: SocketAddrV4,
    },
    /// A flow's connect() did not complete within the connect timeout after its start.
    #[error("flows[{flow}]: connecting to {to} timed out")]
    ConnectTimeout {
        /// The flow's index in the spec.
        flow: usize,
        /// The receiver's address.
        to: SocketAddrV4,
    },
    /// The run ended before a flow's connection was established.
    #[error("flows[{flow}]: the connection to {to} was not established before the end of the run")]
    NotEstablished {
        /// The flow's index in the spec.
        flow: usize,
        /// The receiver's address.
        to: SocketAddrV4,
    },
    /// The forwarder forwarded a SYN or SYN-ACK later than
    /// `EmuOptions::max_handshake_lateness_us`: Linux takes its first RTT sample from the
    /// handshake, so the run would measure a biased min RTT. The Python backend runs the
    /// attempt again; the message starts with [`SETUP_DISTURBED`].
    #[error(
        "{SETUP_DISTURBED}: a handshake packet of flow {flow} was forwarded {late_us} us \
         late (bound {bound_us} us); Linux's first RTT sample and min RTT would read high"
    )]
    HandshakeDisturbed {
        /// The flow's index in the spec.
        flow: u32,
        /// How late the packet was forwarded (us).
        late_us: u64,
        /// The bound it exceeded (us).
        bound_us: u64,
    },
    /// A host's TUN device reported an error or hung up during the run (its namespace was
    /// deleted under the run?).
    #[error("the TUN device of host {host} failed during the run")]
    TunFailed {
        /// Index of the host in `EmuConfig::hosts`.
        host: usize,
    },
    /// A stop request (e.g. SIGINT) ended the run.
    #[error("interrupted")]
    Interrupted,
    /// A worker thread stopped because the run was stopped (by a request or another
    /// thread's failure, which is then the run's error), before t = 0 or after.
    #[error("stopped{}", if *.before_start { " before the start" } else { "" })]
    Stopped {
        /// The stop came before t = 0 was set.
        before_start: bool,
    },
    /// A thread of the run panicked (a bug in ccfair).
    #[error("{thread} panicked")]
    Panicked {
        /// Which thread: "a setup thread", "the forwarder", "a worker thread".
        thread: &'static str,
    },
    /// One of ccfair's BPF congestion controls failed. `context`, when set, is the part of
    /// the run it concerns (`flows[2]`, `flows[2].cca_params`, `BPF congestion control
    /// ccf1a2bbbr (Bbr)`).
    #[error("{}{source}", prefix(.context.as_deref()))]
    Bpf {
        /// Where in the run, as the message's prefix.
        context: Option<String>,
        /// What failed.
        #[source]
        source: BpfError,
    },
}

impl EmuError {
    /// A failed system call: `context` names the call and its object.
    pub fn os(context: impl Into<String>, source: io::Error) -> Self {
        EmuError::Os {
            context: context.into(),
            source: Arc::new(source),
        }
    }

    /// An invalid entry `field` of the configuration.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        EmuError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    /// A BPF failure concerning `context` (e.g. `flows[2]`).
    pub fn bpf(context: impl Into<String>, source: BpfError) -> Self {
        EmuError::Bpf {
            context: Some(context.into()),
            source,
        }
    }
}

impl From<BpfError> for EmuError {
    fn from(source: BpfError) -> Self {
        EmuError::Bpf {
            context: None,
            source,
        }
    }
}

/// `"{context}: "`, or nothing.
fn prefix(context: Option<&str>) -> String {
    context.map(|c| format!("{c}: ")).unwrap_or_default()
}

/// Why one of ccfair's BPF congestion controls could not be loaded, registered or used.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BpfError {
    /// The programs are not part of this build; the text says what was missing when it
    /// was built (clang, libbpf's headers).
    #[error("{0}")]
    NotBuilt(&'static str),
    /// libbpf (`libbpf.so.1`) cannot be loaded.
    #[error("libbpf.so.1 cannot be loaded (Debian: apt-get install libbpf1)")]
    LibbpfMissing,
    /// The libbpf found lacks a function ccfair calls (it is older than 1.0).
    #[error("libbpf.so.1 has no {symbol} (libbpf 1.0 or newer is needed)")]
    LibbpfTooOld {
        /// The missing function.
        symbol: &'static str,
    },
    /// The name to register under is not 1 to 15 of `[A-Za-z0-9_.]` (the kernel's rule for
    /// BPF object names).
    #[error("BPF congestion control name {name:?}: 1 to 15 of [A-Za-z0-9_.]")]
    BadName {
        /// The rejected name.
        name: String,
    },
    /// The program's object does not hold its name placeholder exactly once, so the run's
    /// name cannot be written over it.
    #[error("the {algorithm:?} object has {copies} copies of its name placeholder, not 1")]
    Placeholder {
        /// The program.
        algorithm: Algorithm,
        /// How many copies were found.
        copies: usize,
    },
    /// libbpf could not open the object; `log` is the end of what libbpf printed.
    #[error("libbpf could not open the object: {log}")]
    Open {
        /// libbpf's last messages, joined by " | ".
        log: String,
    },
    /// The object lacks a map ccfair needs.
    #[error("the object has no map {map}")]
    NoMap {
        /// The map's name.
        map: String,
    },
    /// libbpf refused to mark the struct_ops map for registration through a link.
    #[error("libbpf refused the struct_ops link flag")]
    LinkFlag,
    /// The kernel refused to load the programs (the verifier, BTF, CO-RE relocations).
    #[error("the kernel refused the program ({source}): {log}")]
    ProgramRefused {
        /// The error code `bpf_object__load` returned.
        #[source]
        source: Arc<io::Error>,
        /// libbpf's last messages (the verifier's log among them).
        log: String,
    },
    /// The kernel refused the struct_ops value (the congestion control's hooks).
    #[error("the kernel refused the congestion control ({source}): {log}")]
    OpsRefused {
        /// errno after `bpf_map__attach_struct_ops`.
        #[source]
        source: Arc<io::Error>,
        /// libbpf's last messages.
        log: String,
    },
    /// `BPF_LINK_CREATE` of the struct_ops map failed: registration through a link needs
    /// Linux 6.4 or newer.
    #[error("registering the congestion control: {0} (Linux 6.4 or newer is needed)")]
    Register(#[source] Arc<io::Error>),
    /// The program's socket storage differs in size from ccfair's copy of its layout
    /// (bpf/ccfair_cc.h and crates/ccfair-emu/src/bpfcc.rs disagree).
    #[error(
        "BPF congestion control {name}: socket storage of {bytes} bytes, ccfair expects \
         {expected} (bpf/ccfair_cc.h and crates/ccfair-emu/src/bpfcc.rs disagree)"
    )]
    StorageSize {
        /// The registered name.
        name: String,
        /// The map's value size.
        bytes: usize,
        /// The size of ccfair's layout.
        expected: usize,
    },
    /// A flow's `cca_params` are not valid parameters of the algorithm (as the simulator
    /// checks them).
    #[error("{algorithm} parameters: {message}")]
    Params {
        /// The ccfair algorithm ("bbr", "copa").
        algorithm: &'static str,
        /// The parameter check's message, naming the parameter.
        message: String,
    },
    /// A Copa parameter the BPF program does not implement.
    #[error(
        "copa parameter ecn_response = \"loss\" is simulator-only: ccfair's BPF Copa \
         ignores ECN (leave it at \"none\" on the kernel backend)"
    )]
    CopaEcnResponse,
    /// A bpf(2) command on a map failed. `op` says which (writing a flow's parameters,
    /// reading its state, the map's value size).
    #[error("{op}: {source}")]
    Map {
        /// What was being done.
        op: &'static str,
        /// The error bpf(2) returned.
        #[source]
        source: Arc<io::Error>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_the_python_backend_reads_are_kept() {
        // python/ccfair/backends/kernel/run.py retries a run whose error contains
        // SETUP_DISTURBED.
        let e = EmuError::HandshakeDisturbed {
            flow: 1,
            late_us: 912,
            bound_us: 500,
        };
        assert_eq!(
            e.to_string(),
            "handshake disturbed: a handshake packet of flow 1 was forwarded 912 us late \
             (bound 500 us); Linux's first RTT sample and min RTT would read high"
        );
        assert!(e.to_string().starts_with(SETUP_DISTURBED));
        // tests/test_kernel_bpf.py quotes it; the CLI shows "interrupted".
        assert_eq!(
            BpfError::LibbpfMissing.to_string(),
            "libbpf.so.1 cannot be loaded (Debian: apt-get install libbpf1)"
        );
        assert_eq!(EmuError::Interrupted.to_string(), "interrupted");
    }

    #[test]
    fn context_is_the_prefix_and_the_system_error_the_source() {
        let refused = io::Error::from_raw_os_error(libc::ECONNREFUSED);
        let e = EmuError::os("flows[3]: connect to 10.200.0.2:5201", refused);
        assert!(
            e.to_string()
                .starts_with("flows[3]: connect to 10.200.0.2:5201: Connection refused"),
            "{e}"
        );
        let source = std::error::Error::source(&e).expect("the io::Error");
        let io = source.downcast_ref::<Arc<io::Error>>().expect("io::Error");
        assert_eq!(io.raw_os_error(), Some(libc::ECONNREFUSED));

        let params = BpfError::Params {
            algorithm: "bbr",
            message: "bw_rtts: must be at least 1".into(),
        };
        assert_eq!(
            EmuError::bpf("flows[2].cca_params", params.clone()).to_string(),
            "flows[2].cca_params: bbr parameters: bw_rtts: must be at least 1"
        );
        assert_eq!(
            EmuError::from(params).to_string(),
            "bbr parameters: bw_rtts: must be at least 1"
        );
        assert_eq!(
            EmuError::Stopped { before_start: true }.to_string(),
            "stopped before the start"
        );
        assert_eq!(
            EmuError::Stopped {
                before_start: false
            }
            .to_string(),
            "stopped"
        );
        let config = serde_json::from_str::<crate::EmuConfig>("{}").unwrap_err();
        let e = EmuError::Config(Arc::new(config));
        assert!(
            e.to_string().starts_with("emulator config: missing field"),
            "{e}"
        );
    }
}
