//! The intercept control channel on Windows: a named pipe whose security
//! descriptor lets only its owner connect.
//!
//! The user names a file path (`--socket PATH`, or the session's); the pipe
//! is named after it (`\\.\pipe\mcpscope-…`, a hash of the path as given),
//! and an empty file stands at the path so that what lists sessions finds it.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::windows::io::{FromRawHandle, OwnedHandle};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use std::time::Instant;
use windows_sys::Win32::Foundation::{
    ERROR_NO_DATA, ERROR_PIPE_BUSY, ERROR_PIPE_CONNECTED, ERROR_PIPE_LISTENING, GENERIC_READ, GENERIC_WRITE,
    INVALID_HANDLE_VALUE,
};
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, FILE_FLAG_FIRST_PIPE_INSTANCE, OPEN_EXISTING, PIPE_ACCESS_DUPLEX, SECURITY_IDENTIFICATION,
    SECURITY_SQOS_PRESENT,
};
use windows_sys::Win32::System::Pipes::{
    ConnectNamedPipe, CreateNamedPipeW, DisconnectNamedPipe, PIPE_NOWAIT, PIPE_READMODE_BYTE,
    PIPE_REJECT_REMOTE_CLIENTS, PIPE_TYPE_BYTE, PIPE_UNLIMITED_INSTANCES, PIPE_WAIT, PeekNamedPipe,
    SetNamedPipeHandleState, WaitNamedPipeW,
};

/// The pipe's name for the path the user gave: the same for `C:\x`,
/// `c:/x` and `x` run from `C:\` (absolute, separators and case folded).
fn pipe_name(path: &Path) -> Vec<u16> {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let folded = absolute.to_string_lossy().replace('/', "\\").to_lowercase();
    // FNV-1a: stable across runs and builds, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for unit in folded.encode_utf16() {
        hash = (hash ^ u64::from(unit)).wrapping_mul(0x0100_0000_01b3);
    }
    super::wide(std::ffi::OsStr::new(&format!(r"\\.\pipe\mcpscope-{hash:016x}")))
}

/// Where a proxy waits for the user's commands.
pub struct ControlListener {
    name: Vec<u16>,
    /// The instance the next client connects to.
    waiting: std::sync::Mutex<OwnedHandle>,
}

impl ControlListener {
    /// Listens for this user only. The first instance is created with
    /// FILE_FLAG_FIRST_PIPE_INSTANCE: if anything already holds the name
    /// (another proxy on the same path, or a squatter), binding fails.
    pub fn bind(path: &Path) -> io::Result<ControlListener> {
        let name = pipe_name(path);
        let first = instance(&name, true)?;
        let _ = File::create(path);
        Ok(ControlListener {
            name,
            waiting: std::sync::Mutex::new(first),
        })
    }

    /// The next connection, or `None` when none is waiting: never blocks.
    pub fn accept(&self) -> io::Result<Option<ControlStream>> {
        let mut waiting = self.waiting.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let handle = raw(&*waiting);
        // SAFETY: a pipe instance we own, in non-blocking mode: returns at once.
        let connected = unsafe { ConnectNamedPipe(handle, std::ptr::null_mut()) } != 0;
        if !connected {
            let e = io::Error::last_os_error();
            match e.raw_os_error().map(|c| c as u32) {
                Some(ERROR_PIPE_CONNECTED) => {}
                Some(ERROR_PIPE_LISTENING) => return Ok(None),
                // A client came and went before it was served (a probe:
                // `answers`): free the instance for the next one.
                Some(ERROR_NO_DATA) => {
                    // SAFETY: a pipe instance we own.
                    unsafe { DisconnectNamedPipe(handle) };
                    return Ok(None);
                }
                _ => return Err(e),
            }
        }
        let next = instance(&self.name, false)?;
        let served = std::mem::replace(&mut *waiting, next);
        // Served by a thread of its own, which blocks on it.
        let mode = PIPE_READMODE_BYTE | PIPE_WAIT;
        // SAFETY: changing the mode of a pipe we own.
        unsafe { SetNamedPipeHandleState(raw(&served), &mode, std::ptr::null(), std::ptr::null()) };
        Ok(Some(ControlStream::new(File::from(served))))
    }
}

fn raw(handle: &impl std::os::windows::io::AsRawHandle) -> windows_sys::Win32::Foundation::HANDLE {
    handle.as_raw_handle()
}

fn instance(name: &[u16], first: bool) -> io::Result<OwnedHandle> {
    let descriptor = super::security::Descriptor::owner_only()?;
    let attributes = descriptor.attributes();
    let open_mode = PIPE_ACCESS_DUPLEX | if first { FILE_FLAG_FIRST_PIPE_INSTANCE } else { 0 };
    // SAFETY: a NUL-terminated name and attributes that outlive the call.
    let handle = unsafe {
        CreateNamedPipeW(
            name.as_ptr(),
            open_mode,
            PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_NOWAIT | PIPE_REJECT_REMOTE_CLIENTS,
            PIPE_UNLIMITED_INSTANCES,
            64 * 1024,
            64 * 1024,
            0,
            &attributes,
        )
    };
    if handle == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a handle just created and owned by nobody else.
    Ok(unsafe { OwnedHandle::from_raw_handle(handle) })
}

/// One connection on the control channel, either end.
pub struct ControlStream {
    pipe: File,
    /// Shared by the clones, as a socket's timeout is.
    read_timeout: Arc<Mutex<Option<Duration>>>,
}

impl ControlStream {
    fn new(pipe: File) -> ControlStream {
        ControlStream {
            pipe,
            read_timeout: Arc::default(),
        }
    }

    pub fn connect(path: &Path) -> io::Result<ControlStream> {
        let name = pipe_name(path);
        for _ in 0..50 {
            // SAFETY: a NUL-terminated name. Identification only: whoever
            // serves the pipe cannot act as this user.
            let handle = unsafe {
                CreateFileW(
                    name.as_ptr(),
                    GENERIC_READ | GENERIC_WRITE,
                    0,
                    std::ptr::null(),
                    OPEN_EXISTING,
                    SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION,
                    std::ptr::null_mut(),
                )
            };
            if handle != INVALID_HANDLE_VALUE {
                // SAFETY: a handle just opened and owned by nobody else.
                return Ok(ControlStream::new(unsafe { File::from_raw_handle(handle) }));
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(ERROR_PIPE_BUSY as i32) {
                return Err(e);
            }
            // SAFETY: a NUL-terminated name.
            unsafe { WaitNamedPipeW(name.as_ptr(), 100) };
        }
        Err(io::Error::new(io::ErrorKind::TimedOut, "the control pipe stayed busy"))
    }

    /// Whether a proxy answers at `path`.
    pub fn answers(path: &Path) -> bool {
        ControlStream::connect(path).is_ok()
    }

    pub fn try_clone(&self) -> io::Result<ControlStream> {
        Ok(ControlStream {
            pipe: self.pipe.try_clone()?,
            read_timeout: Arc::clone(&self.read_timeout),
        })
    }

    /// A read that waits longer fails with `WouldBlock`, as a socket's does.
    /// (A pipe read cannot be given a timeout: the pipe is watched for
    /// bytes until then.)
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        *self
            .read_timeout
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = timeout;
        Ok(())
    }

    /// Waits until bytes are there (or the other end is gone) or `timeout`
    /// passes.
    fn wait_readable(&self, timeout: Duration) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut available = 0u32;
            // SAFETY: a pipe handle we own; only the count is asked for.
            let ok = unsafe {
                PeekNamedPipe(
                    raw(&self.pipe),
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut(),
                    &mut available,
                    std::ptr::null_mut(),
                )
            };
            // Bytes, or an error (the end closed): the read says which.
            if ok == 0 || available > 0 {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "no answer on the control pipe in time",
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Read for ControlStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let timeout = *self
            .read_timeout
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(timeout) = timeout {
            self.wait_readable(timeout)?;
        }
        self.pipe.read(buf)
    }
}

impl Write for ControlStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pipe.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.pipe.flush()
    }
}
