//! The command table: names, aliases, usage and help text in one place, so
//! that parsing, `help`, tab completion and the documentation agree.

use std::sync::OnceLock;

/// Everything known about one command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandHelp {
    /// The dbx name (`step up` is two words).
    pub name: &'static str,
    /// Other spellings, gdb's mostly; `info b` style ones are two words.
    pub aliases: &'static [&'static str],
    /// One line; alternatives separated by ` | `.
    pub usage: &'static str,
    /// One line for `help` with no topic.
    pub summary: &'static str,
    pub description: &'static str,
    pub example: &'static str,
}

const fn entry(
    name: &'static str,
    aliases: &'static [&'static str],
    usage: &'static str,
    summary: &'static str,
    description: &'static str,
    example: &'static str,
) -> CommandHelp {
    CommandHelp {
        name,
        aliases,
        usage,
        summary,
        description,
        example,
    }
}

static COMMANDS: &[CommandHelp] = &[
    entry(
        "run",
        &["r"],
        "run [ARGS] [< IN] [> OUT | >> OUT]",
        "start the program",
        "Start the program with ARGS (quoted as in the shell) and optional redirections. \
         With no arguments, the arguments and redirections of the previous run are used again.",
        "run -v input.txt > out.log",
    ),
    entry(
        "rerun",
        &[],
        "rerun [ARGS] [< IN] [> OUT | >> OUT]",
        "start the program afresh, with no arguments unless given",
        "Like run, but with no arguments the program is started with none at all.",
        "rerun",
    ),
    entry(
        "kill",
        &["k"],
        "kill",
        "kill the program",
        "Kill the program being debugged; breakpoints are kept for the next run.",
        "kill",
    ),
    entry(
        "quit",
        &["q", "exit"],
        "quit",
        "leave rdbx",
        "Leave rdbx, killing a program it started (a program it attached to is detached).",
        "quit",
    ),
    entry(
        "attach",
        &[],
        "attach PID",
        "debug a running process",
        "Attach to the running process PID and stop every one of its threads; the program is \
         found from /proc/PID/exe and breakpoints already set are inserted. rdbx -p PID [PROGRAM] \
         does the same at start-up. Refused while another process is being debugged (kill or \
         detach first), or when the process is another user's or already traced.",
        "attach 4242",
    ),
    entry(
        "detach",
        &[],
        "detach",
        "let the process run free",
        "Remove breakpoints from the process (they stay defined for a later run or attach), put \
         back what rdbx changed and let it continue untraced; a signal it was stopped with is \
         delivered to it, not lost. quit (and kill) detach from a process rdbx attached to.",
        "detach",
    ),
    entry(
        "stop",
        &[],
        "stop in FUNCTION | stop at [FILE:]LINE  [-if EXPR] [-count N] [-temp]",
        "set a breakpoint",
        "Stop when FUNCTION is entered or LINE is reached. -if stops only when EXPR is true \
         (the rest of the line is the expression), -count N stops at every N-th hit, \
         -temp deletes the breakpoint after its first stop. FILE may be quoted. FUNCTION is \
         written as where shows it, generics and closures included \
         (wordfreq::Counter<K>::feed, <X as Y>::f); a suffix such as Counter::feed finds \
         every match, and a function inlined in several places gets a location in each.",
        "stop at hello.c:12 -if i == 3",
    ),
    entry(
        "stopi",
        &[],
        "stopi at ADDRESS | stopi in FUNCTION  [-if EXPR] [-count N] [-temp]",
        "set a breakpoint on an instruction",
        "Stop when the instruction at ADDRESS (a number or an expression) is about to execute.",
        "stopi at 0x401136",
    ),
    entry(
        "break",
        &["b", "br", "brea"],
        "break LOCATION [if EXPR]",
        "set a breakpoint (gdb style)",
        "gdb's form of stop. LOCATION is FUNCTION, FILE:LINE, LINE, FILE:FUNCTION or *ADDRESS.",
        "break main.c:20 if n > 10",
    ),
    entry(
        "tbreak",
        &[],
        "tbreak LOCATION [if EXPR]",
        "set a temporary breakpoint (gdb style)",
        "Like break, but the breakpoint is deleted when it is first hit.",
        "tbreak main",
    ),
    entry(
        "when",
        &[],
        "when in FUNCTION | when at [FILE:]LINE  [-if EXPR] { COMMAND; ... }",
        "run commands when a location is reached",
        "Each time the location is reached (and EXPR is true), run the commands in braces, \
         separated by semicolons, then continue unless one of them stops. A when among them \
         sets another (they nest at most 16 deep).",
        "when at loop.c:8 { print i; print sum }",
    ),
    entry(
        "status",
        &["info breakpoints", "info break", "info b", "i b"],
        "status",
        "list breakpoints",
        "List the breakpoints and when-commands with their numbers.",
        "status",
    ),
    entry(
        "delete",
        &["d"],
        "delete N [N...] | delete all",
        "delete breakpoints",
        "Delete the breakpoints with the given numbers (from status), or all of them.",
        "delete 2 3",
    ),
    entry(
        "clear",
        &[],
        "clear [LOCATION]",
        "delete the breakpoints at a location",
        "Delete the breakpoints at LOCATION, or at the current line when none is given.",
        "clear hello.c:12",
    ),
    entry(
        "ignore",
        &[],
        "ignore [SIGNAL...] | ignore N COUNT",
        "let signals through, or skip breakpoint hits",
        "With signal names or numbers: do not stop when the program receives them, pass them \
         on. With none: list the ignored signals. With two numbers (gdb): breakpoint N \
         ignores its next COUNT hits.",
        "ignore SIGALRM",
    ),
    entry(
        "condition",
        &[],
        "condition N [EXPR]",
        "set or remove a breakpoint condition",
        "Make breakpoint N stop only when EXPR is true; without EXPR it stops always.",
        "condition 1 argc > 2",
    ),
    entry(
        "enable",
        &[],
        "enable [N...]",
        "enable breakpoints",
        "Enable the given breakpoints, or all of them.",
        "enable 2",
    ),
    entry(
        "disable",
        &[],
        "disable [N...]",
        "disable breakpoints",
        "Disable the given breakpoints, or all of them; they are kept but do not stop.",
        "disable 2",
    ),
    entry(
        "cont",
        &["c", "continue"],
        "cont [N] [sig SIGNAL]",
        "continue the program",
        "Continue after a stop. With N, stop only at the N-th hit of the current breakpoint. \
         sig SIGNAL delivers that signal as the program resumes (sig 0: none).",
        "cont sig SIGUSR1",
    ),
    entry(
        "step",
        &["s"],
        "step [N]",
        "step one source line, into calls",
        "Run to the next source line, entering called functions (and inlined calls); N times. \
         In optimized code it follows gdb's rules (see \"Breakpoints and stepping in optimized \
         code\" in docs/commands.md).",
        "step 3",
    ),
    entry(
        "step up",
        &["finish", "fin"],
        "step up",
        "run until the current function returns",
        "Continue until the current function returns to its caller, and show the return value.",
        "step up",
    ),
    entry(
        "next",
        &["n"],
        "next [N]",
        "step one source line, over calls",
        "Run to the next source line in this function, stepping over calls (inlined ones \
         too); N times.",
        "next",
    ),
    entry(
        "stepi",
        &["si"],
        "stepi [N]",
        "step one instruction",
        "Execute one machine instruction (N instructions), entering calls.",
        "stepi",
    ),
    entry(
        "nexti",
        &["ni"],
        "nexti [N]",
        "step one instruction, over calls",
        "Execute one machine instruction (N instructions), stepping over calls.",
        "nexti 4",
    ),
    entry(
        "where",
        &["bt", "backtrace"],
        "where [N] [t@T]",
        "show the call stack",
        "Print the call stack, innermost frame first, down to main (dbxenv stack_past_main on, \
         gdb's set backtrace past-main on, shows the frames below it); only the innermost N \
         frames with N; of thread t@T (as threads lists it) instead of the current thread.",
        "where 5 t@2",
    ),
    entry(
        "up",
        &[],
        "up [N]",
        "select a calling frame",
        "Move N frames (default 1) towards main and show the new frame; past the outermost \
         frame, go to it.",
        "up 2",
    ),
    entry(
        "down",
        &[],
        "down [N]",
        "select a called frame",
        "Move N frames (default 1) towards the innermost frame and show it; past the \
         innermost frame, go to it.",
        "down",
    ),
    entry(
        "frame",
        &["f"],
        "frame [N]",
        "select or show a frame",
        "Select frame N (as numbered by where), or show the current frame.",
        "frame 1",
    ),
    entry(
        "threads",
        &["info threads"],
        "threads",
        "list threads",
        "List the threads of the program; the current one is marked.",
        "threads",
    ),
    entry(
        "thread",
        &["t"],
        "thread t@N | thread N",
        "select a thread",
        "Make thread t@N (as threads lists it; gdb's plain N works too) current; where, print \
         and the like then apply to it.",
        "thread t@2",
    ),
    entry(
        "regs",
        &["info registers", "info reg", "i r"],
        "regs [REGISTER...]",
        "show registers",
        "Show the general-purpose registers of the current frame, or only those named.",
        "info registers rip",
    ),
    entry(
        "list",
        &["l"],
        "list [FUNCTION | [FILE:]LINE | [FILE:]FIRST,LAST | -]",
        "show source lines",
        "Show source lines around a function or line; with no argument, the next lines; \
         with -, the lines before the last ones shown.",
        "list main",
    ),
    entry(
        "dis",
        &["disassemble", "disas"],
        "dis [ADDRESS | FUNCTION [COUNT]] | x/Ni ADDRESS",
        "disassemble instructions",
        "Disassemble COUNT instructions from ADDRESS (default: the current pc). gdb's \
         disassemble shows the whole function; x/Ni ADDRESS shows N instructions.",
        "dis $pc 5",
    ),
    entry(
        "loadobjects",
        &["info sharedlibrary", "info sharedlib"],
        "loadobjects",
        "list loaded objects",
        "List the executable and the shared libraries loaded, with their addresses.",
        "loadobjects",
    ),
    entry(
        "print",
        &["p"],
        "print [-FMT] EXPR | print/FMT EXPR",
        "evaluate and print an expression",
        "Evaluate the C expression EXPR in the current frame and print its value. FMT is one \
         of x (hex), d, u, o (octal), t (binary), a (address), c (char), f (float), s, z. \
         gdb's FIRST@COUNT is an array of COUNT objects in memory from FIRST on; dbx's \
         ARRAY[FIRST..LAST:STRIDE] shows a slice, each element with its index.",
        "print/x flags & 0xff",
    ),
    entry(
        "display",
        &[],
        "display [EXPR] | display [-FMT] EXPR | display/FMT EXPR",
        "print an expression at every stop",
        "Print EXPR, numbered, each time the program stops (and once now), evaluated in the \
         frame of the stop: 1: i = 5. As in gdb, a display that uses a local variable or \
         parameter belongs to the function it was made in and is shown only at stops in that \
         function; one of globals only is shown at every stop. One that cannot be evaluated \
         where it is shown shows its error in place and stays. With no argument, show the \
         displays now.",
        "display/x flags",
    ),
    entry(
        "undisplay",
        &[],
        "undisplay N [N...] | undisplay all",
        "stop displaying expressions",
        "Remove the displays with the given numbers, or all of them.",
        "undisplay 1",
    ),
    entry(
        "whatis",
        &[],
        "whatis EXPR",
        "show the type of an expression",
        "Print the type name of EXPR: type = struct point.",
        "whatis argv",
    ),
    entry(
        "ptype",
        &[],
        "ptype EXPR",
        "show a type in full",
        "Print the type of EXPR with the members of structures expanded.",
        "ptype struct node",
    ),
    entry(
        "examine",
        &["x"],
        "examine [ADDR] [/NFU] | x[/NFU] [ADDR]",
        "show memory in a format",
        "Show N units of memory from ADDR (an expression; without it, after the last unit \
         shown). F is a format: x (hex), d, u, o (octal), t (binary), c (char), f (float), \
         a (address with symbol), s (C string), i (instruction); U a size: b h w g (1, 2, 4, \
         8 bytes). Format and size default to the previous ones (x and w at first). Lines \
         start with the address and the variable or function it is in: 0x404028 <g_arr>:.",
        "x/4xw &array",
    ),
    entry(
        "dump",
        &["info locals"],
        "dump [FUNCTION]",
        "show the local variables of a frame",
        "Print each local variable of the selected frame (after up/down/frame N, that \
         frame) as NAME = VALUE, one per line; with FUNCTION, of the innermost frame of \
         FUNCTION.",
        "dump",
    ),
    entry(
        "showleaks",
        &[],
        "showleaks [-a] [-n FRAMES] [-json]",
        "check the stopped program for leaks (heap tracing)",
        "A leak check at this stop, as dbx's runtime checking did: the blocks the heap-tracing \
         experiment says are in use are classified by a scan of the process's memory (writable \
         data outside the heap, every thread's stack and registers, then the blocks reached): \
         definitely lost (no pointer to it), indirectly lost (pointed to only from lost blocks), \
         possibly lost (only pointers into its middle), still reachable. The leaks (definitely \
         and possibly lost) are listed grouped by allocation stack, largest first, with FRAMES \
         frames (default 8): only those new since the last showleaks of this process; -a lists \
         all the leaks so far. The summary counts every class. Needs collector heaptrace on.",
        "showleaks -n 4",
    ),
    entry(
        "showmemuse",
        &[],
        "showmemuse [-a] [-n FRAMES] [-json]",
        "show the heap blocks in use, by allocation stack",
        "The blocks the heap-tracing experiment says are in use at this stop, grouped by \
         allocation stack, largest first, with FRAMES frames of each stack (default 8); -a \
         lists every group (else the 20 largest). Needs collector heaptrace on.",
        "showmemuse",
    ),
    entry(
        "showblock",
        &[],
        "showblock [-a] [-json] ADDRESS",
        "show the heap block that holds an address",
        "The block in use that holds ADDRESS (an expression: a pointer variable, an address): \
         its start, size, which call made it, when (order number and time since the \
         experiment started), in which thread, and its allocation stack. Needs collector \
         heaptrace on.",
        "showblock node->next",
    ),
    entry(
        "info args",
        &[],
        "info args",
        "show the parameters of the selected frame",
        "Print each parameter of the selected frame as NAME = VALUE, one per line.",
        "info args",
    ),
    entry(
        "assign",
        &["set var", "set variable", "set"],
        "assign LVALUE = EXPR",
        "change a variable",
        "Evaluate EXPR and store it into LVALUE in the current frame.",
        "assign count = 0",
    ),
    entry(
        "call",
        &[],
        "call FUNC(ARGS)",
        "call a function of the program",
        "Call FUNC in the current thread with ARGS (expressions: numbers, characters, \
         \"strings\" copied into the program, variables, registers), converted to the types of \
         FUNC's parameters as C would. A non-void result is printed as print shows it; \
         print FUNC(ARGS) works too. Registers (vector ones included) and a system call the \
         thread was in are restored afterwards. A breakpoint, a crash or another signal \
         during the call abandons it and says so; so does a call still running after \
         call_timeout seconds (see dbxenv).",
        "call record(\"x\", 2.5)",
    ),
    entry(
        "catch",
        &[],
        "catch [SIGNAL...]",
        "stop when signals arrive",
        "Stop when the program receives one of the signals; with none, list the caught \
         signals. Signals may be given as SIGSEGV, SEGV, segv or 11.",
        "catch SIGUSR1",
    ),
    entry(
        "handle",
        &["info signals"],
        "handle SIGNAL... [stop|nostop|print|noprint|pass|nopass]...",
        "set what happens on signals (gdb style)",
        "Set whether SIGNAL stops the program, is reported, and is passed to the program. \
         stop implies print, noprint implies nostop. Without actions, show the settings; \
         SIGNAL may be all.",
        "handle SIGPIPE nostop noprint pass",
    ),
    entry(
        "help",
        &["h"],
        "help [COMMAND]",
        "show help",
        "List the commands, or show how to use one of them.",
        "help stop",
    ),
    entry(
        "source",
        &[],
        "source FILE",
        "run commands from a file",
        "Read FILE and run each of its lines as a command. Scripts may source others, 32 deep at most.",
        "source ~/.rdbxrc",
    ),
    entry(
        "collector",
        &[],
        "collector SUBCOMMAND [ARGS]",
        "control the performance collector (see the collector ... entries)",
        "Collect performance data (clock profiles with call stacks, samples) while the program runs \
         under rdbx. Subcommands: enable, disable, pause, resume, profile, hwprofile, synctrace, \
         heaptrace, iotrace, mpitrace, offcpu, sample, dbxsample, limit, archive, store, show, status, \
         version; \
         help collector NAME describes each.",
        "collector enable",
    ),
    entry(
        "collector enable",
        &[],
        "collector enable",
        "collect performance data from the next run",
        "Every enable makes a new experiment: at the next run or rerun rdbx creates the \
         experiment directory, preloads libcollector.so and starts it at the program's entry point. \
         On a running process that was started with collection (after collector disable), a new \
         experiment starts at once; loading the library into a process started without it is not \
         supported yet.",
        "collector enable",
    ),
    entry(
        "collector disable",
        &[],
        "collector disable",
        "stop collecting and close the experiment",
        "Close the current experiment (a last sample, then the end of the log); the program goes on \
         without collection. Before a run, cancel a collector enable.",
        "collector disable",
    ),
    entry(
        "collector pause",
        &[],
        "collector pause",
        "stop recording, keeping the experiment open",
        "Stop recording profile data in the running experiment; a sample is recorded just before.",
        "collector pause",
    ),
    entry(
        "collector resume",
        &[],
        "collector resume",
        "resume recording after collector pause",
        "Resume recording in the running experiment; a sample is recorded just after.",
        "collector resume",
    ),
    entry(
        "collector profile",
        &[],
        "collector profile on|off | collector profile timer on|hi|lo|N[m|u] | collector profile depth N",
        "clock profiling and its interval",
        "Clock-based profiling with call stacks (default on, 10 ms). The interval is on (10 ms), \
         hi or high (1 ms), lo or low (100 ms) or a number of milliseconds; suffix m for ms, u for \
         microseconds. The collector rounds it to what the system can do, with a warning in the log. \
         `profile depth N` sets the call-stack depth limit (default 256, at most 2048): deeper \
         stacks are recorded as truncated.",
        "collector profile timer 2.5m",
    ),
    entry(
        "collector hwprofile",
        &[],
        "collector hwprofile on|off|list | collector hwprofile counter NAME [INTERVAL] [NAME2 [INTERVAL2] ...]",
        "counter overflow profiling: the call stack every INTERVAL events of a counter",
        "Profiles the next experiment on counters (off by default; set before collector enable or run), as gprofng collect -h does: each thread counts each counter and, every INTERVAL events, is interrupted and its call stack recorded with the count since its previous record, for a metric named after the counter in every view. list shows the counters this machine offers, with their short names, default intervals and whether their events carry a data address, and says plainly when there is no hardware PMU (software counters: page-faults, minor-faults, major-faults, context-switches, cpu-migrations, alignment-faults, emulation-faults, task-clock, cpu-clock; hardware ones: cycles, insts, cache and branch events, the kernel's named events, raw rHEX). counter chooses up to 8 counters and turns counter profiling on; an INTERVAL is on (the default), hi, lo or a number of events. on without counters chosen profiles the machine's default counters (cycles and insts with a hardware PMU, page-faults without). Page-fault events carry the faulting address, and so do the CPU's memory events (mem-loads, mem-stores) where the PMU has them, sampled precisely; the data-object views attribute those addresses to variables. An unknown name is an error naming the closest one; a hardware counter on a machine without a PMU is an error, unless written NAME? (cycles?: profiled where the machine can count it, elsewhere a warning and the run goes on without it). Clock profiling can be on at the same time.",
        "collector hwprofile counter page-faults 1 context-switches hi",
    ),
    entry(
        "collector synctrace",
        &[],
        "collector synctrace on|off | collector synctrace threshold MICROSECONDS|calibrate|all",
        "synchronization wait tracing: each long wait for a lock, with its call stack",
        "Traces waits in pthread_mutex_lock, pthread_cond_wait, pthread_rwlock_rdlock and wrlock, sem_wait (and their timed and clock forms), pthread_join and pthread_barrier_wait in the next experiment (off by default; set before collector enable or run), as the Sync Wait Time and Sync Wait Count metrics. A call is recorded, with its wait time, object address, thread and call stack, when it waited at least the threshold: a number of microseconds, all (every call that blocked), or calibrate (the default: 5 times an uncontended mutex lock and unlock, measured at start, at least 1 microsecond). A call that did not block is never recorded. threshold sets the threshold only; on turns tracing on. In a process rdbx attached to, the GOT entries of these functions are redirected from collector enable until collector disable.",
        "collector synctrace threshold 1000",
    ),
    entry(
        "collector heaptrace",
        &[],
        "collector heaptrace on|off",
        "heap tracing: every allocation and free, with its call stack",
        "Traces malloc, calloc, realloc, reallocarray, memalign, posix_memalign, aligned_alloc, valloc, pvalloc, free and anonymous mmap/munmap in the next experiment (off by default; set before collector enable or run). Each event keeps its size, thread, call stack and an order exact across threads. In a process rdbx attached to, the GOT entries of the malloc family are redirected from collector enable until collector disable.",
        "collector heaptrace on",
    ),
    entry(
        "collector iotrace",
        &[],
        "collector iotrace on|off",
        "I/O tracing: every file I/O call, with its bytes, time and call stack",
        "Traces the file I/O calls of the next experiment (off by default; set before collector enable or run), as gprofng collect -i does, for the I/O Time, Read Time, Write Time, Other I/O Time, I/O Error Time, Read Bytes, Write Bytes, Read Count, Write Count, Other I/O Count and I/O Error Count metrics: open, openat, creat, close, read, write, pread, pwrite, readv, writev, preadv, pwritev, lseek, fsync, fdatasync, dup, dup2, dup3, sendfile, copy_file_range (and their 64 forms) and the stdio functions fopen, fdopen, freopen, fclose, fread, fwrite, fgets, getline, getdelim, fputs, puts, fflush, fseek, fseeko. Each call is recorded with its descriptor, bytes moved, wall time, whether it failed, thread and call stack, and the path it named (opens). Not traced: the calls the C library makes inside other functions, the printf family, and the per-character fgetc and fputc. In a process rdbx attached to, the GOT entries of these functions are redirected from collector enable until collector disable.",
        "collector iotrace on",
    ),
    entry(
        "collector mpitrace",
        &[],
        "collector mpitrace on|off",
        "MPI tracing: every MPI call, with its time, messages, bytes, peers and call stack",
        "Traces the MPI calls of the next experiment (off by default; set before collector enable or run), as the MPI Time, MPI Sends, MPI Bytes Sent, MPI Receives, MPI Bytes Received and Other MPI Calls metrics: the point-to-point calls (MPI_Send, MPI_Bsend, MPI_Ssend, MPI_Rsend, MPI_Isend and their nonblocking forms, MPI_Recv, MPI_Irecv, MPI_Sendrecv, MPI_Sendrecv_replace, MPI_Probe, MPI_Iprobe), the completions (MPI_Wait, MPI_Waitall, MPI_Waitany, MPI_Waitsome, MPI_Test and its forms, MPI_Request_free), the collectives (MPI_Barrier, MPI_Bcast, MPI_Reduce, MPI_Allreduce, MPI_Gather(v), MPI_Scatter(v), MPI_Allgather(v), MPI_Alltoall(v), MPI_Reduce_scatter(_block), MPI_Scan, MPI_Exscan), MPI_Win_fence, MPI_Win_lock, MPI_Init, MPI_Init_thread and MPI_Finalize. The collector interposes them through the MPI profiling interface and calls the library's PMPI_ functions. Each call is recorded with its time, the messages and bytes it sent and received (a receive's bytes are what arrived; a nonblocking receive's are counted when a wait or test completes it; collectives by the manual's model: every rank exchanges with every rank, itself included), its peer ranks numbered in MPI_COMM_WORLD, tag, communicator, thread and call stack; the experiment's log says the process's rank. Bytes and ranks need Open MPI; with another MPI library the calls are timed only. A program that never calls MPI_Init runs as usual (rdbx collect warns). In a process rdbx attached to, the GOT entries of these functions are redirected from collector enable until collector disable.",
        "collector mpitrace on",
    ),
    entry(
        "collector offcpu",
        &[],
        "collector offcpu on|off",
        "off-CPU profiling: each switch off the CPU, with its call stack and how long",
        "Records, in the next experiment (off by default; set before collector enable or run), every time a thread is switched off its CPU (it blocks in a system call, sleeps, waits for a lock or a page, or is preempted): the call stack where it was and, once it runs again, how long it was off the CPU. With the clock profile this makes a wall-clock profile. It uses a context-switch perf event that counts in kernel mode, so it needs root, CAP_PERFMON or kernel.perf_event_paranoid at 1 or less; otherwise the experiment's log says why and the program runs without off-CPU data. Under rdbx each switch costs a stop that rdbx passes on silently; the time rdbx holds the program stopped (at a breakpoint, after a step or Ctrl-C) is left out of every thread's off-CPU time, as it is of sync-wait and I/O times.",
        "collector offcpu on",
    ),
    entry(
        "collector sample",
        &[],
        "collector sample periodic|manual | collector sample period SECONDS | collector sample record [NAME]",
        "periodic samples, their period, or a sample now",
        "Samples record process-wide figures (CPU time, faults, context switches, I/O, RSS). \
         periodic (default, every second) or manual; period sets the interval (decimals allowed); \
         record takes a sample now in the running experiment, labelled NAME.",
        "collector sample record phase2",
    ),
    entry(
        "collector dbxsample",
        &[],
        "collector dbxsample on|off",
        "a sample at every stop of the program",
        "With on (the default), a sample is recorded each time rdbx stops the program (breakpoint, \
         step, signal, Ctrl-C), so the run divides at the stops.",
        "collector dbxsample off",
    ),
    entry(
        "collector limit",
        &[],
        "collector limit MEGABYTES|unlimited",
        "cap on recorded profile data",
        "Past the limit, profile data stop with a warning in the log and samples go on (default: \
         unlimited).",
        "collector limit 500",
    ),
    entry(
        "collector archive",
        &[],
        "collector archive on|off|copy",
        "describe (or copy) the load objects at the end",
        "on (default): archives/index lists path, build-id, size and mtime of every load object; \
         copy also copies the files, so the experiment can be analysed after a rebuild; off: nothing.",
        "collector archive copy",
    ),
    entry(
        "collector store",
        &[],
        "collector store directory DIR | collector store filename NAME.er | collector store group NAME.erg",
        "where the next experiment is written",
        "The experiment directory is DIR/NAME.er (default: the current directory and test.1.er, \
         the number going up past existing experiments).",
        "collector store filename run.1.er",
    ),
    entry(
        "collector show",
        &[],
        "collector show [all|profile|hwprofile|synctrace|heaptrace|iotrace|mpitrace|offcpu|sample|store|limit|archive]",
        "show the collector settings",
        "Show the settings that the next experiment will use (all by default).",
        "collector show store",
    ),
    entry(
        "collector status",
        &[],
        "collector status",
        "state of the current experiment",
        "Show the experiment directory, whether it is active, paused or closed, and the events, \
         samples and bytes recorded so far.",
        "collector status",
    ),
    entry(
        "collector version",
        &[],
        "collector version",
        "version of the collector library",
        "Show the version of libcollector.so that the next experiment will use, and where it is.",
        "collector version",
    ),
    entry(
        "complete",
        &[],
        "complete TEXT",
        "list the completions of a command line",
        "Print, one per line, the command lines Tab would complete TEXT to: command names, \
         then function and file names, and after print, display, whatis and ptype the \
         variables of the selected frame and the globals, or after . and -> the members of \
         the expression's structure (gdb's complete).",
        "complete print s.",
    ),
    entry(
        "dbxenv",
        &[],
        "dbxenv [NAME [VALUE]] | set call-timeout SECONDS | set backtrace past-main on|off",
        "show or change debugger settings",
        "With no argument, list the settings; with NAME, show one; with NAME VALUE, change \
         it. call_timeout: seconds an injected call (call, print FUNC(ARGS)) may run before \
         it is abandoned and the thread's state restored (default 10). stack_past_main: on \
         shows the frames below main in where and lets up reach them (default off, as gdb's \
         backtrace past-main).",
        "dbxenv call_timeout 2",
    ),
    entry(
        "analyze",
        &[],
        "analyze [COMMAND]",
        "analyze collected performance data",
        "Analyze the current experiment (or the last one of the session) with er_print's commands: with no argument enter the analysis REPL (prompt \"(rdbx analyze) \", quit or Ctrl-D returns), with a COMMAND run just that. Works while the program is stopped mid-run, on everything recorded so far. analyze help lists the analysis commands.",
        "analyze functions",
    ),
    entry(
        "maintenance",
        &["maint"],
        "maintenance crash panic | stack-overflow | thread-stack-overflow",
        "make rdbx crash on purpose (for testing)",
        "Crash rdbx on purpose, as gdb's maintenance commands do, to check that it lets the \
         program go first: a process it attached to or started runs on untraced, with its \
         breakpoints removed and its pending signals delivered. panic panics in the command \
         thread, stack-overflow recurses without end in it, thread-stack-overflow does so in a \
         thread of its own.",
        "maintenance crash panic",
    ),
];

/// The whole command table, in the order of `help`.
pub fn all_help() -> &'static [CommandHelp] {
    COMMANDS
}

/// Every first word that starts a command (names and aliases), sorted, for
/// tab completion.
pub fn command_names() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names: Vec<&'static str> = COMMANDS
            .iter()
            .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
            .filter_map(|spelling| spelling.split_whitespace().next())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    })
}

/// One line per command: name, aliases and summary.
pub fn help_summary() -> String {
    let mut out = String::new();
    for command in COMMANDS {
        let single: Vec<&str> = command
            .aliases
            .iter()
            .copied()
            .filter(|a| !a.contains(' '))
            .collect();
        let name = if single.is_empty() {
            command.name.to_string()
        } else {
            format!("{} ({})", command.name, single.join(", "))
        };
        out.push_str(&format!("{name:<28} {}\n", command.summary));
    }
    out
}

/// Usage, aliases, description and example of a command, found by its name
/// or any alias (`help b` gives break).
pub fn help_for(name: &str) -> Option<String> {
    if name.trim() == "info" || name.trim() == "i" {
        return Some(info_help());
    }
    find_help(name).map(entry_text)
}

/// A table entry as `help NAME` shows it: usage, aliases, description,
/// example.
pub(crate) fn entry_text(command: &CommandHelp) -> String {
    let mut text = format!("usage: {}\n", command.usage);
    if !command.aliases.is_empty() {
        text.push_str(&format!("aliases: {}\n", command.aliases.join(", ")));
    }
    text.push_str(command.description);
    text.push_str(&format!("\nexample: {}\n", command.example));
    text
}

/// `info` is no command of its own: list the gdb `info` spellings.
fn info_help() -> String {
    let mut text = String::from("gdb's info commands and the rdbx commands they stand for:\n");
    for command in COMMANDS {
        if command.name.starts_with("info ") {
            text.push_str(&format!("  {:<20} (gdb's own)\n", command.name));
        }
        for alias in command.aliases.iter().filter(|a| a.starts_with("info ")) {
            text.push_str(&format!("  {alias:<20} = {}\n", command.name));
        }
    }
    text
}

/// The table entry for a name or alias, multi-word ones included.
pub fn find_help(name: &str) -> Option<&'static CommandHelp> {
    let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
    COMMANDS
        .iter()
        .find(|c| c.name == name || c.aliases.contains(&name.as_str()))
}

/// The entry a one-word command spelling stands for.
pub(crate) fn resolve_word(word: &str) -> Option<&'static CommandHelp> {
    COMMANDS
        .iter()
        .find(|c| c.name == word || c.aliases.contains(&word))
}

/// The usage line of a command in the table.
pub(crate) fn usage_of(name: &str) -> &'static str {
    find_help(name).map_or("", |c| c.usage)
}

/// The known spelling nearest to `word`, if it is near enough to be a typo.
pub(crate) fn suggest(word: &str) -> Option<String> {
    nearest_spelling(word, command_names())
}

/// The spelling in `names` nearest to `word`, if near enough to be a typo
/// (the debugger's and the analysis REPL's suggestions).
pub(crate) fn nearest_spelling(word: &str, names: &[&str]) -> Option<String> {
    let word = word.to_ascii_lowercase();
    let max_distance = if word.chars().count() <= 3 { 1 } else { 2 };
    names
        .iter()
        .map(|name| (edit_distance(&word, name), *name))
        .filter(|(d, name)| *d <= max_distance && *d < word.len().max(name.len()))
        // Prefer the closest, then the longer (more descriptive) spelling.
        .min_by_key(|(d, name)| (*d, std::cmp::Reverse(name.len())))
        .map(|(_, name)| name.to_string())
}

/// Optimal string alignment distance: Levenshtein plus adjacent swaps, so
/// that `stpo` is one edit from `stop`.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        for j in 0..=b.len() {
            d[i * width + j] = if i == 0 || j == 0 {
                i + j
            } else {
                let cost = usize::from(a[i - 1] != b[j - 1]);
                let mut best = (d[(i - 1) * width + j] + 1)
                    .min(d[i * width + j - 1] + 1)
                    .min(d[(i - 1) * width + j - 1] + cost);
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    best = best.min(d[(i - 2) * width + j - 2] + 1);
                }
                best
            };
        }
    }
    d[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("stpo", "stop"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("stpo").as_deref(), Some("stop"));
        assert_eq!(suggest("contnue").as_deref(), Some("continue"));
        assert_eq!(suggest("wehre").as_deref(), Some("where"));
        assert_eq!(suggest("xyzzy"), None);
    }

    #[test]
    fn names_are_unique() {
        let mut all: Vec<&str> = COMMANDS
            .iter()
            .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
            .collect();
        let count = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), count, "a spelling names two commands");
    }

    #[test]
    fn every_entry_is_complete_and_one_line() {
        for c in COMMANDS {
            for text in [c.usage, c.summary, c.description, c.example] {
                assert!(!text.is_empty() && !text.contains('\n'), "{}", c.name);
            }
        }
    }

    #[test]
    fn help_resolves_aliases() {
        let b = help_for("b").unwrap();
        assert!(b.starts_with("usage: break LOCATION"), "{b}");
        assert_eq!(help_for("info  b"), help_for("status"));
        assert_eq!(help_for("finish"), help_for("step up"));
        assert!(help_for("nosuch").is_none());
        assert!(help_for("info")
            .unwrap()
            .contains("info registers       = regs"));
        let summary = help_summary();
        assert_eq!(summary.lines().count(), COMMANDS.len());
        assert!(summary.contains("cont (c, continue)"));
    }

    #[test]
    fn completion_names() {
        let names = command_names();
        for name in ["stop", "info", "i", "x", "set", "step", "finish", "bt"] {
            assert!(names.contains(&name), "{name}");
        }
        assert!(!names.contains(&"up") || names.iter().filter(|n| **n == "up").count() == 1);
        assert!(names.windows(2).all(|w| w[0] < w[1]));
    }
}
