//! rdbx on a terminal (a pseudo-terminal): the line editor's Tab
//! completion of variables and members, and Enter repeating the last step,
//! as a user at the prompt sees them.
mod common;
use common::*;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// rdbx with its standard input, output and error on a pseudo-terminal.
struct Terminal {
    child: std::process::Child,
    master: std::fs::File,
    output: Arc<Mutex<Vec<u8>>>,
}

impl Terminal {
    fn start(program: &std::path::Path) -> Terminal {
        let (mut master, mut slave) = (-1, -1);
        let size = libc::winsize {
            ws_row: 40,
            ws_col: 200,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty fills two descriptors we then own.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &size,
            )
        };
        assert_eq!(rc, 0, "openpty");
        // SAFETY: both descriptors were just opened for us.
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let io = |fd: &OwnedFd| Stdio::from(fd.try_clone().expect("dup"));
        let child = Command::new(rdbx_bin())
            .arg(program)
            .stdin(io(&slave))
            .stdout(io(&slave))
            .stderr(io(&slave))
            .env("TERM", "xterm")
            .env("HOME", scratch_dir("terminal-home"))
            .spawn()
            .expect("spawn rdbx");
        drop(slave);
        let master = std::fs::File::from(master);
        let output = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().expect("dup master");
        let sink = output.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = reader.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        Terminal {
            child,
            master,
            output,
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }

    fn type_keys(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).expect("type");
        self.master.flush().expect("flush");
    }

    /// Waits until `needle` has appeared `count` times on the terminal.
    fn wait_for(&self, needle: &str, count: usize) {
        let deadline = Instant::now() + TIMEOUT;
        while self.text().matches(needle).count() < count {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {count} x {needle:?}:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn prompts(&self) -> usize {
        self.text().matches("(rdbx) ").count()
    }

    /// Waits until rdbx has exited.
    fn wait_for_exit(&mut self) {
        let deadline = Instant::now() + TIMEOUT;
        while self.child.try_wait().expect("wait").is_none() {
            assert!(
                Instant::now() < deadline,
                "rdbx did not quit:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Types a line and waits for the next prompt.
    fn command(&mut self, line: &str) {
        let prompts = self.prompts();
        self.type_keys(line);
        self.type_keys("\r");
        self.wait_for("(rdbx) ", prompts + 1);
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn tab_completes_variables_and_members_and_enter_repeats_next() {
    let mut t = Terminal::start(&prog("session-O0"));
    t.wait_for("(rdbx) ", 1);
    t.command("stop in combine");
    t.command("run");
    t.wait_for("stopped in combine", 1);
    t.command("next");
    // An empty line: the next again.
    t.command("");
    let stops = t.text().matches("stopped in combine").count();
    assert_eq!(stops, 3, "{}", t.text());
    // Tab completes the local's name (its only candidate), then a member:
    // the line typed is `print local_pair.right`.
    t.command("print local_p\t.rig\t");
    t.wait_for("local_pair.right = 2", 1);
    // After print, an empty line repeats nothing.
    t.command("");
    assert_eq!(
        t.text().matches("local_pair.right = 2").count(),
        1,
        "{}",
        t.text()
    );
    assert_eq!(t.text().matches("stopped in").count(), 3, "{}", t.text());
    t.type_keys("quit\r");
    t.wait_for("Quit anyway? (y or n)", 1);
    t.type_keys("y\r");
    t.wait_for_exit();
}

/// `quit` on a terminal with a program rdbx started asks first; `n` keeps
/// the session and the program, `y` ends both.
#[test]
fn quit_asks_before_killing_the_program() {
    let mut t = Terminal::start(&prog("session-O0"));
    t.wait_for("(rdbx) ", 1);
    t.command("stop in combine");
    t.command("run");
    t.wait_for("stopped in combine", 1);
    let pid: i32 = t
        .text()
        .split("(process id ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|n| n.parse().ok())
        .expect("the process id");
    let prompts = t.prompts();
    t.type_keys("quit\r");
    t.wait_for("Quit anyway? (y or n)", 1);
    t.type_keys("n\r");
    t.wait_for("(rdbx) ", prompts + 1);
    t.command("print 6 * 7");
    t.wait_for("6 * 7 = 42", 1);
    // SAFETY: kill with signal 0 only checks that the process exists.
    assert_eq!(unsafe { libc::kill(pid, 0) }, 0, "{}", t.text());
    t.type_keys("quit\r");
    t.wait_for("Quit anyway? (y or n)", 2);
    t.type_keys("y\r");
    t.wait_for_exit();
    // SAFETY: as above.
    assert_ne!(
        unsafe { libc::kill(pid, 0) },
        0,
        "the program outlived quit"
    );
}
