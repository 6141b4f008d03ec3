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
use std::time::Duration;
use windows_sys::Win32::Foundation::{
    ERROR_PIPE_BUSY, ERROR_PIPE_CONNECTED, ERROR_PIPE_LISTENING, GENERIC_READ, GENERIC_WRITE, INVALID_HANDLE_VALUE,
};
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, FILE_FLAG_FIRST_PIPE_INSTANCE, OPEN_EXISTING, PIPE_ACCESS_DUPLEX,
};
use windows_sys::Win32::System::Pipes::{
    ConnectNamedPipe, CreateNamedPipeW, PIPE_NOWAIT, PIPE_READMODE_BYTE, PIPE_REJECT_REMOTE_CLIENTS, PIPE_TYPE_BYTE,
    PIPE_UNLIMITED_INSTANCES, PIPE_WAIT, SetNamedPipeHandleState, WaitNamedPipeW,
};

/// The pipe's name for the path the user gave.
fn pipe_name(path: &Path) -> Vec<u16> {
    // FNV-1a: stable across runs and builds, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for unit in super::wide(path.as_os_str()) {
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
        let handle = raw(&waiting);
        // SAFETY: a pipe instance we own, in non-blocking mode: returns at once.
        let connected = unsafe { ConnectNamedPipe(handle, std::ptr::null_mut()) } != 0;
        if !connected {
            let e = io::Error::last_os_error();
            match e.raw_os_error().map(|c| c as u32) {
                Some(ERROR_PIPE_CONNECTED) => {}
                Some(ERROR_PIPE_LISTENING) => return Ok(None),
                _ => return Err(e),
            }
        }
        let next = instance(&self.name, false)?;
        let served = std::mem::replace(&mut *waiting, next);
        // Served by a thread of its own, which blocks on it.
        let mode = PIPE_READMODE_BYTE | PIPE_WAIT;
        // SAFETY: changing the mode of a pipe we own.
        unsafe { SetNamedPipeHandleState(raw(&served), &mode, std::ptr::null(), std::ptr::null()) };
        Ok(Some(ControlStream(File::from(served))))
    }
}

fn raw(handle: &OwnedHandle) -> windows_sys::Win32::Foundation::HANDLE {
    std::os::windows::io::AsRawHandle::as_raw_handle(handle)
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
pub struct ControlStream(File);

impl ControlStream {
    pub fn connect(path: &Path) -> io::Result<ControlStream> {
        let name = pipe_name(path);
        for _ in 0..50 {
            // SAFETY: a NUL-terminated name.
            let handle = unsafe {
                CreateFileW(
                    name.as_ptr(),
                    GENERIC_READ | GENERIC_WRITE,
                    0,
                    std::ptr::null(),
                    OPEN_EXISTING,
                    0,
                    std::ptr::null_mut(),
                )
            };
            if handle != INVALID_HANDLE_VALUE {
                // SAFETY: a handle just opened and owned by nobody else.
                return Ok(ControlStream(unsafe { File::from_raw_handle(handle) }));
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
        self.0.try_clone().map(ControlStream)
    }

    /// Reads on a pipe cannot time out here; the callers' own deadlines
    /// (the proxy's answer waits) apply instead.
    pub fn set_read_timeout(&self, _timeout: Option<Duration>) -> io::Result<()> {
        Ok(())
    }
}

impl Read for ControlStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for ControlStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}
