//! Process trees on Windows: each server in a Job Object of its own.
//!
//! The job holds the server and everything it starts (npx's node child
//! included: nothing may break away), and is made with kill-on-close, so
//! if mcpscope dies, the system closes the job and ends the tree: the job
//! is the watchdog. The server is started suspended, in a new process
//! group, and let run only once it is in the job, so nothing it starts can
//! slip out first. Stopping gently is CTRL_BREAK_EVENT to that group (what
//! Ctrl-Break in its console would send); for good, TerminateJobObject.

use std::collections::HashMap;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::os::windows::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use windows_sys::Win32::Foundation::{FILETIME, HANDLE, INVALID_HANDLE_VALUE, STILL_ACTIVE};
use windows_sys::Win32::System::Console::{CTRL_BREAK_EVENT, GenerateConsoleCtrlEvent};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectBasicAccountingInformation,
    JobObjectExtendedLimitInformation, QueryInformationJobObject, SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::ProcessStatus::{K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS};
use windows_sys::Win32::System::Threading::{
    CREATE_NEW_PROCESS_GROUP, CREATE_SUSPENDED, GetExitCodeProcess, GetProcessTimes, OpenProcess, OpenThread,
    PROCESS_QUERY_LIMITED_INFORMATION, ResumeThread, THREAD_SUSPEND_RESUME,
};

/// The environment variable that marks a server's descendants (kept on
/// every system, so a server sees the same environment).
pub const TREE_TAG_VAR: &str = "MCPSCOPE_SERVER";

pub use super::super::{Stop, Usage};

impl Stop {
    /// What is sent, as notes name it ("CTRL_BREAK_EVENT").
    pub fn name(self) -> &'static str {
        match self {
            Stop::Gently => "CTRL_BREAK_EVENT",
            Stop::ForGood => "TerminateJobObject",
        }
    }
}

/// A job with kill-on-close: closing its last handle ends what is in it.
#[derive(Debug)]
struct Job(OwnedHandle);

// SAFETY: a kernel handle, usable from any thread.
unsafe impl Send for Job {}
// SAFETY: every call made on it is thread-safe in the kernel.
unsafe impl Sync for Job {}

impl Job {
    fn new() -> std::io::Result<Job> {
        // SAFETY: an unnamed job with the default security.
        let handle = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if handle.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a handle just created and owned by nobody else.
        let job = Job(unsafe { OwnedHandle::from_raw_handle(handle) });
        // SAFETY: zeroed is a valid JOBOBJECT_EXTENDED_LIMIT_INFORMATION.
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: the struct the information class names, with its size.
        let ok = unsafe {
            SetInformationJobObject(
                job.raw(),
                JobObjectExtendedLimitInformation,
                (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if ok == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(job)
    }

    fn raw(&self) -> HANDLE {
        self.0.as_raw_handle()
    }

    /// How many processes of the job have not ended.
    fn active(&self) -> u32 {
        // SAFETY: zeroed is valid for this plain struct.
        let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { std::mem::zeroed() };
        // SAFETY: the struct the information class names, with its size.
        let ok = unsafe {
            QueryInformationJobObject(
                self.raw(),
                JobObjectBasicAccountingInformation,
                (&mut info as *mut JOBOBJECT_BASIC_ACCOUNTING_INFORMATION).cast(),
                std::mem::size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 { 0 } else { info.ActiveProcesses }
    }

    fn terminate(&self) -> bool {
        // SAFETY: a job we own.
        self.active() > 0 && unsafe { TerminateJobObject(self.raw(), 1) } != 0
    }
}

/// The jobs of the trees alive now, by the pid of their leader (which is
/// also their process group's id), for the calls that name a group by it.
static JOBS: Mutex<Option<HashMap<u32, Weak<Job>>>> = Mutex::new(None);

fn job_of(pgid: u32) -> Option<Arc<Job>> {
    let jobs = JOBS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    jobs.as_ref()?.get(&pgid)?.upgrade()
}

/// A server's job: the server and everything it started.
#[derive(Clone, Debug)]
pub struct ServerTree {
    /// The leader's pid, which names its process group too.
    pub pgid: u32,
    tag: String,
    /// Always there for a started server; None only for a tree named by
    /// its pid alone.
    job: Option<Arc<Job>>,
}

impl PartialEq for ServerTree {
    fn eq(&self, other: &Self) -> bool {
        self.pgid == other.pgid && self.tag == other.tag
    }
}

impl Eq for ServerTree {}

impl ServerTree {
    /// The tree of a child started from a command [`prepare_tree`] readied
    /// (suspended): puts it in a new job, then lets it run. Without its job
    /// the tree could outlive mcpscope, so a failure here is the caller's
    /// to report (it ends the child).
    pub(crate) fn started(child: &Child, tag: String) -> std::io::Result<Self> {
        let pid = child.id();
        let job = Job::new()?;
        // SAFETY: a job we own and a process handle std owns.
        if unsafe { AssignProcessToJobObject(job.raw(), child.as_raw_handle()) } == 0 {
            return Err(std::io::Error::last_os_error());
        }
        resume(pid)?;
        let job = Arc::new(job);
        let mut jobs = JOBS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let jobs = jobs.get_or_insert_with(HashMap::new);
        jobs.retain(|_, j| j.strong_count() > 0);
        jobs.insert(pid, Arc::downgrade(&job));
        Ok(Self {
            pgid: pid,
            tag,
            job: Some(job),
        })
    }

    /// Processes outside the job that carry the tag: none can be (nothing
    /// breaks away from it).
    pub fn strays(&self) -> Vec<(u32, bool)> {
        Vec::new()
    }

    /// Stops the tree. False when nothing was left to stop.
    pub fn stop(&self, how: Stop) -> bool {
        match how {
            Stop::Gently => self.running() && ctrl_break(self.pgid),
            Stop::ForGood => match &self.job {
                Some(job) => job.terminate(),
                None => terminate(self.pgid),
            },
        }
    }

    /// Whether anything of the server is still alive.
    pub fn alive(&self) -> bool {
        self.running()
    }

    /// Whether anything of the server can still run (Windows has no
    /// zombies: the same as [`alive`](Self::alive)).
    pub fn running(&self) -> bool {
        match &self.job {
            Some(job) => job.active() > 0,
            None => is_running(self.pgid),
        }
    }

    /// Nothing to collect: Windows keeps no zombies.
    pub fn reap_adopted(&self) {}
}

/// Lets every thread of a process started suspended run; an error when
/// none could be (the process would wait forever).
fn resume(pid: u32) -> std::io::Result<()> {
    // SAFETY: a snapshot of the system's threads, closed below.
    let snapshot = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if snapshot == INVALID_HANDLE_VALUE {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a handle just created and owned by nobody else.
    let snapshot = unsafe { OwnedHandle::from_raw_handle(snapshot) };
    let mut entry = THREADENTRY32 {
        dwSize: std::mem::size_of::<THREADENTRY32>() as u32,
        ..Default::default()
    };
    let mut resumed = 0;
    // SAFETY: entry's size is set, as the calls require.
    let mut more = unsafe { Thread32First(snapshot.as_raw_handle(), &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: opening, resuming and closing one thread.
            unsafe {
                let thread = OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID);
                if !thread.is_null() {
                    if ResumeThread(thread) != u32::MAX {
                        resumed += 1;
                    }
                    windows_sys::Win32::Foundation::CloseHandle(thread);
                }
            }
        }
        // SAFETY: as above.
        more = unsafe { Thread32Next(snapshot.as_raw_handle(), &mut entry) } != 0;
    }
    if resumed == 0 {
        return Err(std::io::Error::other(format!(
            "the server (pid {pid}) was started suspended and none of its threads could be resumed"
        )));
    }
    Ok(())
}

fn ctrl_break(pgid: u32) -> bool {
    // SAFETY: an event to a process group of our console.
    unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, pgid) != 0 }
}

fn terminate(pid: u32) -> bool {
    let Some(process) = open(pid, windows_sys::Win32::System::Threading::PROCESS_TERMINATE) else {
        return false;
    };
    // SAFETY: a process handle we own.
    unsafe { windows_sys::Win32::System::Threading::TerminateProcess(process.as_raw_handle(), 1) != 0 }
}

fn open(pid: u32, access: u32) -> Option<OwnedHandle> {
    // SAFETY: plain call; the handle is owned below.
    let handle = unsafe { OpenProcess(access, 0, pid) };
    if handle.is_null() {
        return None;
    }
    // SAFETY: a handle just opened and owned by nobody else.
    Some(unsafe { OwnedHandle::from_raw_handle(handle) })
}

/// Starts a program mcpscope hands work to but does not serve (the browser
/// a View or a sign-in opens in). Windows keeps no zombies: nothing to reap.
pub fn spawn_reaped(cmd: &mut Command) -> std::io::Result<u32> {
    Ok(cmd.spawn()?.id())
}

/// Readies `cmd` to be the leader of a tree: a new process group (so that
/// CTRL_BREAK_EVENT reaches it and not mcpscope), started suspended until
/// [`ServerTree::started`] has put it in its job.
pub fn prepare_tree(cmd: &mut Command) {
    cmd.creation_flags(CREATE_NEW_PROCESS_GROUP | CREATE_SUSPENDED);
}

/// Windows has no signals.
pub fn exit_signal(_status: &ExitStatus) -> Option<i32> {
    None
}

/// Whether the file may be run: any file (what runs it is its extension,
/// see [`program_candidates`]).
pub fn is_executable(m: &std::fs::Metadata) -> bool {
    m.is_file()
}

/// Whether a command names a path rather than a program to look up.
pub fn names_a_path(program: &str) -> bool {
    program.contains(['/', '\\']) || std::path::Path::new(program).is_absolute()
}

/// The files in `dir` that running `program` may mean, in the order the
/// shell tries them: the name with each extension of PATHEXT (`npx` is
/// `npx.cmd`), or the name as given when it has an extension already.
/// A name that has an extension of PATHEXT already is tried first as it is.
pub fn program_candidates(dir: &std::path::Path, program: &str) -> Vec<std::path::PathBuf> {
    let extensions = path_extensions();
    let has_one = std::path::Path::new(program).extension().is_some_and(|x| {
        extensions
            .iter()
            .any(|e| e[1..].eq_ignore_ascii_case(&x.to_string_lossy()))
    });
    let mut candidates = Vec::with_capacity(extensions.len() + 1);
    if has_one {
        candidates.push(dir.join(program));
    }
    candidates.extend(extensions.iter().map(|ext| dir.join(format!("{program}{ext}"))));
    candidates
}

fn path_extensions() -> Vec<String> {
    let var = std::env::var("PATHEXT").unwrap_or_default();
    let mut exts: Vec<String> = var
        .split(';')
        .filter(|e| e.starts_with('.') && e.len() > 1)
        .map(|e| e.to_ascii_lowercase())
        .collect();
    if exts.is_empty() {
        exts = [".com", ".exe", ".bat", ".cmd"].map(String::from).to_vec();
    }
    exts
}

/// Why the system refused to start `program`, said for a person, when the
/// reason is this system's own: std refuses arguments to a batch file
/// (`npx.cmd`) that cmd.exe could not be told apart safely.
pub fn refusal(program: &std::path::Path, e: &std::io::Error) -> Option<String> {
    let batch = program
        .extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("bat") || x.eq_ignore_ascii_case("cmd"));
    (batch && e.kind() == std::io::ErrorKind::InvalidInput).then(|| {
        format!(
            "{} is a batch file, and one of its arguments holds characters cmd.exe would read as commands \
             (such as \" % ^ & | < > or a newline): Rust's standard library refuses to pass it on. Run the \
             server's own program instead (node with the script's path for npx, python for uvx), or change \
             the argument",
            program.display()
        )
    })
}

/// Sends `signal` to the group led by `pgid`, in Unix's numbering: 0 only
/// asks whether it is alive, 15 (SIGTERM) is CTRL_BREAK_EVENT, 9 (SIGKILL)
/// ends its job. False when no process is left, or for any other signal.
pub fn signal_group(pgid: u32, signal: i32) -> bool {
    match signal {
        0 => group_alive(pgid),
        15 => group_alive(pgid) && ctrl_break(pgid),
        9 => job_of(pgid).map_or_else(|| terminate(pgid), |job| job.terminate()),
        _ => false,
    }
}

/// Whether any process of the tree led by `pgid` is still alive.
pub fn group_alive(pgid: u32) -> bool {
    match job_of(pgid) {
        Some(job) => job.active() > 0,
        None => is_running(pgid),
    }
}

/// The same as [`group_alive`]: Windows keeps no zombies.
pub fn group_running(pgid: u32) -> bool {
    group_alive(pgid)
}

/// Signal names in Linux's numbering: what [`signal_group`] takes, and how
/// the captures recorded on Linux number the signals that ended servers.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        21 => "SIGBREAK",
        _ => "signal",
    }
}

fn filetime_100ns(t: &FILETIME) -> u64 {
    (u64::from(t.dwHighDateTime) << 32) | u64::from(t.dwLowDateTime)
}

/// The process's creation, kernel and user times, in 100 ns units.
fn times(process: &OwnedHandle) -> Option<(u64, u64, u64)> {
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: four FILETIMEs for the call to fill.
    let ok = unsafe {
        GetProcessTimes(
            process.as_raw_handle(),
            &mut created,
            &mut exited,
            &mut kernel,
            &mut user,
        )
    };
    (ok != 0).then(|| (filetime_100ns(&created), filetime_100ns(&kernel), filetime_100ns(&user)))
}

/// A process's CPU time (GetProcessTimes) and working set
/// (GetProcessMemoryInfo), if it can be read.
pub fn usage(pid: u32) -> Option<Usage> {
    let process = open(pid, PROCESS_QUERY_LIMITED_INFORMATION)?;
    let (_, kernel, user) = times(&process)?;
    // SAFETY: zeroed is valid for this plain struct.
    let mut memory: PROCESS_MEMORY_COUNTERS = unsafe { std::mem::zeroed() };
    memory.cb = std::mem::size_of::<PROCESS_MEMORY_COUNTERS>() as u32;
    // SAFETY: the struct with its size set.
    let ok = unsafe { K32GetProcessMemoryInfo(process.as_raw_handle(), &mut memory, memory.cb) };
    Some(Usage {
        cpu: Duration::from_nanos((kernel + user) * 100),
        resident_kib: if ok != 0 {
            memory.WorkingSetSize as u64 / 1024
        } else {
            0
        },
    })
}

/// Asking a process of another console to stop has no gentle form here
/// (a console control event reaches only this console's processes): the
/// caller is told to press Ctrl-C where that process runs.
pub fn ask_to_stop(_pid: u32) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "Windows cannot ask a process in another console to stop: press Ctrl-C in the console where it runs",
    ))
}

/// Whether a process exists and has not exited.
pub fn is_running(pid: u32) -> bool {
    let Some(process) = open(pid, PROCESS_QUERY_LIMITED_INFORMATION) else {
        return false;
    };
    let mut code = 0u32;
    // SAFETY: a process handle we own.
    let ok = unsafe { GetExitCodeProcess(process.as_raw_handle(), &mut code) };
    ok != 0 && code == STILL_ACTIVE as u32
}

/// When a process started (its creation time): only ever compared.
pub fn start_stamp(pid: u32) -> Option<u64> {
    let process = open(pid, PROCESS_QUERY_LIMITED_INFORMATION)?;
    times(&process).map(|(created, _, _)| created)
}

/// Moves this process's stdout to a handle the caller alone holds (stdout
/// then points at NUL), so closing it is a real disconnect for the reader.
/// The handle is not inherited by the servers mcpscope starts.
pub fn take_stdout() -> std::io::Result<std::fs::File> {
    use std::os::windows::io::AsHandle;
    use windows_sys::Win32::System::Console::{GetStdHandle, STD_OUTPUT_HANDLE, SetStdHandle};
    // Not inheritable: only this process holds the client's end from now on.
    let out = std::fs::File::from(std::io::stdout().as_handle().try_clone_to_owned()?);
    let null = std::fs::OpenOptions::new().write(true).open("NUL")?;
    let null = std::os::windows::io::IntoRawHandle::into_raw_handle(null);
    // SAFETY: reads this process's standard output handle.
    let original = unsafe { GetStdHandle(STD_OUTPUT_HANDLE) };
    // SAFETY: an open handle, which stdout keeps from now on.
    if unsafe { SetStdHandle(STD_OUTPUT_HANDLE, null) } == 0 {
        return Err(std::io::Error::last_os_error());
    }
    // The handle the process was started with (perhaps inheritable, so
    // servers started later would hold the client's pipe open) is closed:
    // `out` is the only one left.
    if !original.is_null() && original != INVALID_HANDLE_VALUE {
        // SAFETY: the old standard handle, no longer named by anything.
        unsafe { windows_sys::Win32::Foundation::CloseHandle(original) };
    }
    Ok(out)
}

/// Nothing to do: Windows' heap gives freed pages back by itself.
pub fn give_freed_memory_back() {}

/// The job is the watchdog on Windows: the system ends the tree when
/// mcpscope's last handle to it closes, however mcpscope ends. This stands
/// in for the Unix watchdog process.
pub struct Watchdog {
    tree: ServerTree,
    grace: Duration,
}

/// The Unix watchdog's process name (no such process here).
pub const WATCHDOG_NAME: &std::ffi::CStr = c"mcpscope-watchdog";

impl Watchdog {
    pub fn start(tree: &ServerTree, grace: Duration) -> std::io::Result<Watchdog> {
        Ok(Watchdog {
            tree: tree.clone(),
            grace,
        })
    }

    /// The tree is gone: nothing to do.
    pub fn stand_down(self) {}

    /// Hands the tree over to be ended: CTRL_BREAK_EVENT, then the job
    /// terminated after the grace period, on a thread of its own. Should
    /// mcpscope exit first, closing the job ends the tree all the same.
    pub fn release(self) {
        let Watchdog { tree, grace } = self;
        let _ = std::thread::Builder::new()
            .name("mcpscope-watchdog".into())
            .spawn(move || {
                tree.stop(Stop::Gently);
                let deadline = std::time::Instant::now() + grace;
                while tree.running() && std::time::Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(50));
                }
                tree.stop(Stop::ForGood);
            });
    }
}
