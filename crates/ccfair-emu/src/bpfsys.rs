//! The BPF system interface of the kernel backend: libbpf (loaded at run time with
//! dlopen(3), so that ccfair installs and runs without it when no BPF algorithm is used)
//! and the few bpf(2) commands ccfair issues itself. With `sys`, the only `unsafe` code of
//! ccfair; every block passes pointers to memory it owns, with its real length, and checks
//! the result.
//!
//! libbpf does the hard part of loading an object (BTF, CO-RE relocations against the
//! running kernel, maps, the struct_ops value). Registration goes through a BPF link
//! (`BPF_LINK_CREATE` with `BPF_STRUCT_OPS`, Linux 6.4+): the congestion control is
//! unregistered when the link's file descriptor closes, which the kernel also does when the
//! process dies, even by SIGKILL. (libbpf 1.1, Debian 12's, registers without a link;
//! a registration made that way would outlive a crashed process.)

// bpf(2), dlopen(3) and libbpf's C functions have no safe interface: this module is where
// they get one (with `sys`, the only place of ccfair that needs `unsafe` to run).
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::BpfError;

/// `bpf(2)` commands and constants (include/uapi/linux/bpf.h).
const BPF_MAP_LOOKUP_ELEM: c_int = 1;
const BPF_MAP_UPDATE_ELEM: c_int = 2;
const BPF_OBJ_GET_INFO_BY_FD: c_int = 15;
const BPF_LINK_CREATE: c_int = 28;
const BPF_STRUCT_OPS: u32 = 44;
/// Map flag: a struct_ops map registered through a link.
pub const BPF_F_LINK: u32 = 1 << 13;
/// `BPF_NOEXIST`: create, never overwrite.
pub const BPF_NOEXIST: u64 = 1;

/// `union bpf_attr` is larger than every command's part; the kernel requires the unused
/// tail to be zero.
#[repr(C, align(8))]
struct BpfAttr([u8; 128]);

impl BpfAttr {
    fn new() -> Self {
        BpfAttr([0; 128])
    }
    fn put_u32(&mut self, off: usize, v: u32) {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
    }
    fn put_u64(&mut self, off: usize, v: u64) {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
    }
}

fn bpf(cmd: c_int, attr: &mut BpfAttr) -> io::Result<c_int> {
    // SAFETY: bpf(2) reads (and for some commands writes) `attr`, which we own, of the size
    // we pass; pointers inside it point to buffers the callers own.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut BpfAttr as *mut c_void,
            std::mem::size_of::<BpfAttr>(),
        )
    };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as c_int)
    }
}

/// `BPF_MAP_UPDATE_ELEM`: for a socket-storage map the key is a socket fd.
pub fn map_update(map_fd: RawFd, key: &[u8], value: &[u8], flags: u64) -> io::Result<()> {
    let mut a = BpfAttr::new();
    a.put_u32(0, map_fd as u32);
    a.put_u64(8, key.as_ptr() as u64);
    a.put_u64(16, value.as_ptr() as u64);
    a.put_u64(24, flags);
    bpf(BPF_MAP_UPDATE_ELEM, &mut a).map(|_| ())
}

/// `BPF_MAP_LOOKUP_ELEM` into `value` (which must have the map's value size).
pub fn map_lookup(map_fd: RawFd, key: &[u8], value: &mut [u8]) -> io::Result<()> {
    let mut a = BpfAttr::new();
    a.put_u32(0, map_fd as u32);
    a.put_u64(8, key.as_ptr() as u64);
    a.put_u64(16, value.as_mut_ptr() as u64);
    bpf(BPF_MAP_LOOKUP_ELEM, &mut a).map(|_| ())
}

/// The value size of a map (`struct bpf_map_info.value_size`, via BPF_OBJ_GET_INFO_BY_FD).
pub fn map_value_size(map_fd: RawFd) -> io::Result<u32> {
    // struct bpf_map_info: type, id, key_size, value_size, ... (u32 each).
    let mut info = [0u8; 256];
    let mut a = BpfAttr::new();
    a.put_u32(0, map_fd as u32);
    a.put_u32(4, info.len() as u32);
    a.put_u64(8, info.as_mut_ptr() as u64);
    bpf(BPF_OBJ_GET_INFO_BY_FD, &mut a)?;
    Ok(u32::from_ne_bytes(
        info[12..16].try_into().expect("4 bytes"),
    ))
}

/// Register a loaded struct_ops map (created with [`BPF_F_LINK`]) through a link. The
/// returned fd is the registration: closing it unregisters.
pub fn struct_ops_link_create(map_fd: RawFd) -> io::Result<OwnedFd> {
    let mut a = BpfAttr::new();
    a.put_u32(0, map_fd as u32); // link_create.map_fd
    a.put_u32(4, 0); // target_fd
    a.put_u32(8, BPF_STRUCT_OPS); // attach_type
    let fd = bpf(BPF_LINK_CREATE, &mut a)?;
    // SAFETY: the kernel returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A `#[repr(C)]` struct of integers without padding: every byte pattern is a value and
/// every byte of a value is initialised.
///
/// # Safety
/// Implement only for such structs.
pub unsafe trait Plain: Copy {}

/// The bytes of a [`Plain`] value.
pub fn bytes_of<T: Plain>(v: &T) -> &[u8] {
    // SAFETY: T is Plain: all size_of::<T>() bytes behind the reference are initialised.
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }
}

/// A [`Plain`] value from the first `size_of::<T>()` bytes of `b` (which must be that long).
pub fn from_bytes<T: Plain>(b: &[u8]) -> T {
    assert!(b.len() >= std::mem::size_of::<T>(), "short buffer");
    // SAFETY: the buffer is long enough and any byte pattern is a valid T (Plain).
    unsafe { std::ptr::read_unaligned(b.as_ptr() as *const T) }
}

// ---------------------------------------------------------------------------- libbpf

/// The libbpf functions ccfair calls (libbpf.h, stable ABI since libbpf 1.0).
struct Libbpf {
    open_mem: unsafe extern "C" fn(*const c_void, usize, *const c_void) -> *mut c_void,
    load: unsafe extern "C" fn(*mut c_void) -> c_int,
    close: unsafe extern "C" fn(*mut c_void),
    find_map: unsafe extern "C" fn(*const c_void, *const c_char) -> *mut c_void,
    set_map_flags: unsafe extern "C" fn(*mut c_void, u32) -> c_int,
    map_fd: unsafe extern "C" fn(*const c_void) -> c_int,
    attach_struct_ops: unsafe extern "C" fn(*const c_void) -> *mut c_void,
    link_disconnect: unsafe extern "C" fn(*mut c_void),
    link_destroy: unsafe extern "C" fn(*mut c_void) -> c_int,
}

/// Messages libbpf printed (warnings and errors: the verifier's log among them), for the
/// error of a failed load.
static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

extern "C" {
    fn vsnprintf(buf: *mut c_char, n: usize, fmt: *const c_char, ap: *mut c_void) -> c_int;
}

/// libbpf's print callback: keep warnings and errors (level 0 and 1), drop debug output.
unsafe extern "C" fn print(level: c_int, fmt: *const c_char, ap: *mut c_void) -> c_int {
    if level > 1 {
        return 0;
    }
    let mut buf = [0 as c_char; 1024];
    // SAFETY: libbpf passes a format string and its va_list; vsnprintf writes at most
    // buf.len() bytes, NUL terminated, into our buffer.
    let text = unsafe {
        vsnprintf(buf.as_mut_ptr(), buf.len(), fmt, ap);
        CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
    };
    if let Ok(mut log) = LOG.lock() {
        log.extend(text.lines().map(str::to_string));
        let excess = log.len().saturating_sub(40);
        log.drain(..excess);
    }
    0
}

fn take_log() -> String {
    let mut log = LOG
        .lock()
        .map(|mut l| std::mem::take(&mut *l))
        .unwrap_or_default();
    log.retain(|l| !l.trim().is_empty());
    let n = log.len();
    log.drain(..n.saturating_sub(8));
    log.join(" | ")
}

/// Ok when libbpf can be loaded, else why not.
pub fn libbpf_available() -> Result<(), BpfError> {
    libbpf().map(|_| ())
}

/// The library, or why it could not be loaded.
fn libbpf() -> Result<&'static Libbpf, BpfError> {
    static LIB: OnceLock<Result<Libbpf, BpfError>> = OnceLock::new();
    LIB.get_or_init(open_libbpf).as_ref().map_err(|e| e.clone())
}

/// dlopen(3) libbpf and look up every function ccfair calls; install the print callback.
fn open_libbpf() -> Result<Libbpf, BpfError> {
    let name = c"libbpf.so.1";
    // SAFETY: dlopen(3) with a NUL-terminated name; the handle is kept for the life of the
    // process (never dlclose'd), so the function pointers below stay valid.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return Err(BpfError::LibbpfMissing);
    }
    /// The function `s` of the library as a pointer of type `F`.
    ///
    /// # Safety
    /// `F` must be the `unsafe extern "C" fn` type of that function's C signature.
    unsafe fn sym<F: Copy>(handle: *mut c_void, s: &'static str) -> Result<F, BpfError> {
        assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
        let c = CString::new(s).expect("no NUL in symbol names");
        // SAFETY: dlsym(3) on a live handle with a NUL-terminated name.
        let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
        if p.is_null() {
            return Err(BpfError::LibbpfTooOld { symbol: s });
        }
        // SAFETY: a function pointer has the size of a data pointer (asserted); the caller
        // names the function's type.
        Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
    }
    // SAFETY: each field's type spells out the C signature of the libbpf function of that
    // name (libbpf.h).
    let lib = unsafe {
        Libbpf {
            open_mem: sym(handle, "bpf_object__open_mem")?,
            load: sym(handle, "bpf_object__load")?,
            close: sym(handle, "bpf_object__close")?,
            find_map: sym(handle, "bpf_object__find_map_by_name")?,
            set_map_flags: sym(handle, "bpf_map__set_map_flags")?,
            map_fd: sym(handle, "bpf_map__fd")?,
            attach_struct_ops: sym(handle, "bpf_map__attach_struct_ops")?,
            link_disconnect: sym(handle, "bpf_link__disconnect")?,
            link_destroy: sym(handle, "bpf_link__destroy")?,
        }
    };
    type SetPrint = unsafe extern "C" fn(
        Option<unsafe extern "C" fn(c_int, *const c_char, *mut c_void) -> c_int>,
    ) -> *mut c_void;
    // SAFETY: libbpf_set_print takes a callback of exactly this signature (libbpf.h; the
    // va_list of x86-64 is passed as a pointer).
    unsafe {
        let set_print: SetPrint = sym(handle, "libbpf_set_print")?;
        set_print(Some(print));
    }
    Ok(lib)
}

/// A BPF object loaded into the kernel, with its struct_ops registered through a link.
/// Dropping it unregisters the congestion control and frees the programs and maps (sockets
/// still using it keep a reference until they close).
pub struct StructOps {
    obj: *mut c_void,
    /// The registration: closing it unregisters.
    link: Option<OwnedFd>,
    /// The socket-storage map's fd (owned by `obj`).
    storage_fd: RawFd,
}

// SAFETY: the object is only touched by `Drop`; the fds are plain integers the kernel
// accepts from any thread.
unsafe impl Send for StructOps {}
// SAFETY: `&StructOps` only reads `storage_fd`, an integer.
unsafe impl Sync for StructOps {}

impl StructOps {
    /// Open `elf` (an object file in memory), load it, and register its struct_ops map
    /// `ops_map`; `storage_map` is the socket-storage map the senders use.
    pub fn load(elf: &[u8], ops_map: &str, storage_map: &str) -> Result<StructOps, BpfError> {
        let lib = libbpf()?;
        take_log();
        // SAFETY: libbpf copies the ELF image; the pointer and length describe our slice.
        let obj =
            unsafe { (lib.open_mem)(elf.as_ptr() as *const c_void, elf.len(), std::ptr::null()) };
        if obj.is_null() {
            return Err(BpfError::Open { log: take_log() });
        }
        let mut me = StructOps {
            obj,
            link: None,
            storage_fd: -1,
        };
        let find = |name: &str| -> Result<*mut c_void, BpfError> {
            let c = CString::new(name).expect("no NUL in map names");
            // SAFETY: `obj` is a live object; the name is NUL terminated.
            let m = unsafe { (lib.find_map)(obj, c.as_ptr()) };
            if m.is_null() {
                Err(BpfError::NoMap {
                    map: name.to_string(),
                })
            } else {
                Ok(m)
            }
        };
        let ops = find(ops_map)?;
        let storage = find(storage_map)?;
        // SAFETY: `ops` is a map of the live, not yet loaded object.
        if unsafe { (lib.set_map_flags)(ops, BPF_F_LINK) } != 0 {
            return Err(BpfError::LinkFlag);
        }
        // SAFETY: loads the live object.
        let err = unsafe { (lib.load)(obj) };
        if err != 0 {
            return Err(BpfError::ProgramRefused {
                source: Arc::new(io::Error::from_raw_os_error(-err)),
                log: take_log(),
            });
        }
        // libbpf 1.1 fills the struct_ops value with the programs' fds and writes it; for a
        // map created with BPF_F_LINK that only readies it, registration is the link below.
        // SAFETY: `ops` belongs to the loaded object.
        let pseudo = unsafe { (lib.attach_struct_ops)(ops) };
        if pseudo.is_null() {
            return Err(BpfError::OpsRefused {
                source: Arc::new(io::Error::last_os_error()),
                log: take_log(),
            });
        }
        // SAFETY: `pseudo` is the link libbpf just returned; disconnecting it makes destroy
        // free it without touching the map.
        unsafe {
            (lib.link_disconnect)(pseudo);
            (lib.link_destroy)(pseudo);
        }
        // SAFETY: both maps belong to the loaded object.
        let (ops_fd, storage_fd) = unsafe { ((lib.map_fd)(ops), (lib.map_fd)(storage)) };
        me.storage_fd = storage_fd;
        me.link =
            Some(struct_ops_link_create(ops_fd).map_err(|e| BpfError::Register(Arc::new(e)))?);
        Ok(me)
    }

    /// The socket-storage map (valid while `self` lives).
    pub fn storage_fd(&self) -> RawFd {
        self.storage_fd
    }
}

impl Drop for StructOps {
    fn drop(&mut self) {
        // Unregister first (closing the link), then free programs and maps.
        self.link.take();
        if let Ok(lib) = libbpf() {
            // SAFETY: `obj` came from open_mem and is closed exactly once.
            unsafe { (lib.close)(self.obj) };
        }
    }
}
