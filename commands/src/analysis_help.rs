//! The analysis command table (er_print's language): names, aliases, usage
//! and help text in one place, so that parsing in `analysis.rs`, `help` in
//! the analysis REPL and tab completion cannot drift apart.

use std::sync::OnceLock;

use crate::help::{entry_text, nearest_spelling, CommandHelp};

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

static ANALYSIS_COMMANDS: &[CommandHelp] = &[
    entry(
        "functions",
        &[],
        "functions",
        "list functions with the current metrics",
        "List every function with the current metrics, sorted by the sort metric, <Total> first.",
        "functions",
    ),
    entry(
        "metrics",
        &[],
        "metrics [SPEC]",
        "show or choose the metrics shown",
        "SPEC is items joined by ':'; an item is flags then a name. Flags: e (exclusive), \
         i (inclusive), a (attributed), then . (value), % (percent), + (event count), ! (hide); \
         no visibility flag means value. Names: totalcpu (alias cpu); with sync-wait tracing \
         sync (Sync Wait Time), syncn (Sync Wait Count); with heap tracing heapalloccnt \
         (Allocations), heapallocbytes (Bytes Allocated), heapleakcnt (Leaks), heapleakbytes \
         (Bytes Leaked); with I/O tracing iotime (I/O Time), ioreadtime (Read Time), \
         iowritetime (Write Time), ioothertime (Other I/O Time), ioerrortime (I/O Error \
         Time), ioreadbytes (Read Bytes), iowritebytes (Write Bytes), ioreadcnt (Read \
         Count), iowritecnt (Write Count), ioothercnt (Other I/O Count), ioerrorcnt (I/O \
         Error Count; a failed call counts only there and in I/O Error Time); with off-CPU \
         profiling offcpu (Off-CPU Time) and walltime (Wall Time: Total CPU + Off-CPU); \
         with MPI tracing mpitime (MPI Time), mpisend (MPI Sends), mpibytessent (MPI Bytes \
         Sent), mpireceive (MPI Receives), mpibytesrecv (MPI Bytes Received), mpiother \
         (Other MPI Calls); with counter profiling each counter by the name it was recorded under (cycles, \
         page-faults: its events; a name that begins with e, i or a after a '.', as e.insts; \
         counter_NAME for any counter, needed when NAME reads as a built-in metric, as \
         e.counter_cpu), and with a cycles and an instructions \
         counter cpi (cycles per instruction) and ipc (its inverse, no %); name, size, \
         address. A counter the experiments lack is an error naming theirs. With no SPEC, \
         show the current one (default e.%totalcpu:i.%totalcpu:name; with counters also \
         e.NAME:i.NAME for each and e.cpi:i.cpi; with traces also \
         i.offcpu:i.walltime, i.sync:i.syncn, i.heapleakbytes:i.heapleakcnt:\
         i.heapallocbytes:i.heapalloccnt and i.iotime:i.ioreadbytes:i.iowritebytes:\
         i.ioreadcnt:i.iowritecnt:i.ioothercnt and \
         i.mpitime:i.mpisend:i.mpibytessent:i.mpireceive:i.mpibytesrecv:i.mpiother before \
         name, and no CPU time when there was \
         no clock profiling). A sort metric the new list does not show gives way \
         to the list's first.",
        "metrics ei.%totalcpu:name",
    ),
    entry(
        "sort",
        &[],
        "sort [SPEC]",
        "show or choose the sort metric",
        "Sort by a kind of a metric (e.totalcpu, i.totalcpu, a.totalcpu, i.heapleakbytes, \
         e.cycles, i.cpi, ...), name, size or address. With no SPEC, \
         show the current one (default: the first visible exclusive metric).",
        "sort i.totalcpu",
    ),
    entry(
        "limit",
        &[],
        "limit [N]",
        "show or set the number of rows printed",
        "Print at most N rows in lists; 0 means no limit. With no N, show the current limit.",
        "limit 20",
    ),
    entry(
        "fsummary",
        &[],
        "fsummary",
        "summary block of every function",
        "Print a summary block (metrics, size, address, object, source file) for each function.",
        "fsummary",
    ),
    entry(
        "fsingle",
        &[],
        "fsingle FUNC [N]",
        "summary block of one function",
        "Print the summary block of FUNC (the rest of the line). A trailing separate number N \
         picks the N-th of several functions with that name.",
        "fsingle compute 2",
    ),
    entry(
        "callers-callees",
        &["callers_callees"],
        "callers-callees",
        "callers and callees of every function",
        "For each function, its callers (above) and callees (below) with attributed metrics; \
         the function itself is marked with *.",
        "callers-callees",
    ),
    entry(
        "csingle",
        &[],
        "csingle FUNC [N]",
        "callers and callees of one function",
        "Callers and callees of FUNC (the rest of the line) with attributed metrics. A trailing \
         separate number N picks the N-th of several functions with that name.",
        "csingle std::vector<int>::push_back",
    ),
    entry(
        "calltree",
        &[],
        "calltree",
        "the calling-context tree",
        "Print the whole calling-context tree with inclusive metrics.",
        "calltree",
    ),
    entry(
        "lines",
        &[],
        "lines",
        "metrics by source line",
        "List source lines with the current metrics, sorted.",
        "lines",
    ),
    entry(
        "pcs",
        &[],
        "pcs",
        "metrics by instruction address",
        "List instruction addresses (PCs) with the current metrics, sorted.",
        "pcs",
    ),
    entry(
        "source",
        &[],
        "source FUNC|FILE [N]",
        "annotated source of a function or file",
        "Print the source of FUNC or FILE with metrics beside each line and hot lines marked. \
         In a FILE listing a `<Function: f>` row with f's own metrics comes before the line \
         each function is defined at. A trailing separate number N picks the N-th of several \
         functions with that name.",
        "source main",
    ),
    entry(
        "disasm",
        &[],
        "disasm FUNC|FILE [N]",
        "annotated disassembly of a function or file",
        "Print the disassembly of FUNC or FILE with metrics beside each instruction and source \
         lines interleaved. A trailing separate number N picks among same-named functions.",
        "disasm compute",
    ),
    entry(
        "objects",
        &[],
        "objects",
        "load objects with their metrics",
        "List the load objects (executable and libraries) with exclusive and inclusive metrics.",
        "objects",
    ),
    entry(
        "overview",
        &[],
        "overview",
        "duration and available metrics",
        "Show the experiments' duration, the counters recorded with their intervals, and which \
         metrics are available with their totals.",
        "overview",
    ),
    entry(
        "leaks",
        &[],
        "leaks",
        "heap blocks never freed, by allocation stack",
        "With heap tracing: the blocks not freed when the program ended (not freed yet in a \
         program still running), grouped by allocation stack, largest first: Leaks and Bytes \
         Leaked of each stack and in total. JSON keys: leaks, bytes_leaked, groups.",
        "leaks",
    ),
    entry(
        "allocs",
        &[],
        "allocs",
        "heap allocations, by allocation stack",
        "With heap tracing: every allocation of the malloc family grouped by allocation stack, \
         largest first: Allocations and Bytes Allocated of each stack and in total. JSON keys: \
         allocations, bytes_allocated, groups.",
        "allocs",
    ),
    entry(
        "heap",
        &[],
        "heap",
        "heap-tracing totals, peak and sizes",
        "With heap tracing: allocations, bytes allocated, frees (and frees of blocks allocated \
         before tracing), leaks and bytes leaked, the peak of bytes in use and when, and the \
         allocations by size (powers of two).",
        "heap",
    ),
    entry(
        "ioactivity",
        &[],
        "ioactivity",
        "traced I/O by file name",
        "With I/O tracing: per file name (the path as opened; <stdin>, <stdout>, <stderr> or \
         <fd N> for a descriptor opened before tracing), I/O Time, Read Time, Write Time, \
         Other I/O Time, I/O Error Time, Read Bytes, Write Bytes, Read Count, Write Count, \
         Other I/O Count and I/O Error Count (a failed call counts only as an error), most \
         time first, with <Total>. JSON keys: files, total, and io_time, read_time, \
         write_time, other_io_time, io_error_time, read_bytes, write_bytes, read_count, \
         write_count, other_io_count, io_error_count in each.",
        "ioactivity",
    ),
    entry(
        "iodetail",
        &[],
        "iodetail",
        "traced I/O by opening of a file",
        "With I/O tracing: as ioactivity, per opening of a file (gprofng's virtual file \
         descriptor: from the open or dup that made the descriptor to its close), with the \
         descriptor and when it was opened and closed (seconds since the start).",
        "iodetail",
    ),
    entry(
        "iocallstack",
        &[],
        "iocallstack",
        "traced I/O by call stack",
        "With I/O tracing: the I/O metrics of each call stack that made I/O calls, most time \
         first, with its frames (the I/O function first).",
        "iocallstack",
    ),
    entry(
        "iostat",
        &[],
        "iostat",
        "traced I/O: sizes and extremes",
        "With I/O tracing: for reads and writes, the calls by size (0-1KB, 1KB-8KB, ...), the \
         longest call, the smallest and largest byte counts, total time, calls and bytes; \
         for the other calls and for the failed calls (of any class, counted nowhere else) \
         their count and time. JSON keys: write, read (calls, bytes, io_time, longest, \
         smallest_bytes, largest_bytes, by_size), other, error (calls, io_time), \
         failed_calls.",
        "iostat",
    ),
    entry(
        "mpi_functions",
        &[],
        "mpi_functions",
        "traced MPI calls by MPI function",
        "With MPI tracing: per MPI function (MPI_Send, MPI_Waitall, MPI_Allreduce, ...), its \
         calls, MPI Time, MPI Sends, MPI Bytes Sent, MPI Receives, MPI Bytes Received and \
         Other MPI Calls, summed over the loaded experiments (every rank), most time first, \
         with <Total>. A nonblocking receive's message counts at MPI_Irecv, its bytes at the \
         wait or test that completed it. JSON keys: functions (name, calls, mpi_time, \
         mpi_sends, mpi_bytes_sent, mpi_receives, mpi_bytes_received, mpi_other_calls), \
         total.",
        "mpi_functions",
    ),
    entry(
        "mpi_ranks",
        &[],
        "mpi_ranks",
        "traced MPI calls by rank, and how each rank ended",
        "With MPI tracing: per rank of MPI_COMM_WORLD (each experiment's log says its rank), \
         the MPI metrics, the host and the experiment, and how the process ended (its exit \
         status, or the signal that killed it) and when (seconds since the first start). A \
         rank whose collector did not close its experiment (killed, crashed) is said to have \
         ended early; its data up to then is shown. JSON keys: ranks (rank, host, \
         experiment, ended, signal, exit_code, end, early, and the MPI metrics), total, \
         early (the ranks that ended early).",
        "mpi_ranks",
    ),
    entry(
        "mpi_matrix",
        &[],
        "mpi_matrix",
        "point-to-point bytes and messages from rank to rank",
        "With MPI tracing: the message matrix of the point-to-point calls (sends, receives, \
         MPI_Sendrecv; collectives are not in it): bytes and messages each rank sent to each \
         rank (rows: from, columns: to), as the senders recorded them, and the bytes as the \
         receivers recorded them (the two differ when a rank's data is missing or a message \
         was not received). JSON keys: ranks, bytes, messages, received_bytes (rows by \
         sender, as ranks orders them).",
        "mpi_matrix",
    ),
    entry(
        "syncobjects",
        &["sync_objects"],
        "syncobjects",
        "sync waits by object waited on",
        "With sync-wait tracing: Sync Wait Time and Sync Wait Count per synchronization \
         object (the mutex, condition variable, rwlock, semaphore or barrier; for a join the \
         thread waited for) and kind of wait, most time first, with <Total>. An object a \
         symbol holds is named by it (a global or static lock: queue_lock, table+64), a \
         joined thread by its number in thread_list (t@N, with its experiment when there \
         are several), others by address (a join too, when the log does not say which thread had \
         that pthread_t: a live start, an older experiment). JSON keys: objects (object, \
         name, address, kind, sync_wait_time, sync_wait_count; for a joined thread also \
         thread and experiment), total.",
        "syncobjects",
    ),
    entry(
        "data_objects",
        &[],
        "data_objects",
        "counter events by data object",
        "With a counter that records data addresses (page-faults: collect -h page-faults,1, or \
         collector hwprofile counter page-faults 1): its events per data object, the manual's \
         \"Data Objects\": <Total> first, then every variable, member and artificial \
         aggregate by the sort metric when it is such a counter (else the first), with each \
         object's size and scope (its load object for static data, its function for stack \
         data). A descriptor is {TYPE NAME} ({array:char[4096] buf}, {structure:node head}), \
         a member follows its container after a dot; an event counts in its object, each \
         aggregate holding it and <Total>, on a scalar variable also in <Scalars>, in a heap \
         block in <Heap> and its element (block of N bytes from SITE), which needs heap \
         tracing (-H on), and otherwise in an element of <Unknown>: (No data address), \
         (Undetermined stack data), (Undetermined static data) or (Unidentified). The sample, \
         thread and CPU selections, the filter and limit apply. JSON keys: report, counters, \
         sort, rows (name, scope, kind: total, artificial, object or member, size, metrics: \
         one per counter), and note when heap tracing was off.",
        "data_objects",
    ),
    entry(
        "data_single",
        &[],
        "data_single NAME",
        "one data object and its members",
        "As data_objects, for the objects NAME names (the rest of the line, quotes allowed): \
         a whole descriptor path as data_objects shows it ({structure:holder \
         big_struct}.{array:char[8192000] pages}, <Heap>, <Unknown>), or a variable's bare \
         name (big_table), which may name a variable of several scopes; each with its members \
         that had events. An object without events is an error. JSON keys: report, \
         counters, total, objects (object, members: rows as data_objects').",
        "data_single big_table",
    ),
    entry(
        "data_layout",
        &[],
        "data_layout",
        "events per member of each aggregate type",
        "As data_objects, per aggregate type that had events (structure, union, class): the \
         type with its size and events, then every member at its offset with its size and \
         events, and the padding between members as (Anon); most events first by the sort \
         metric, with <Total>. JSON keys: report, counters, sort, total, types (name, size, \
         metrics, members: name, offset, size, metrics, padding).",
        "data_layout",
    ),
    entry(
        "statistics",
        &[],
        "statistics",
        "process-wide figures",
        "Show process-wide figures: user and system CPU, page faults, context switches.",
        "statistics",
    ),
    entry(
        "header",
        &[],
        "header",
        "how the experiment was recorded",
        "Show the target, host, collection settings (the counters with their intervals, and \
         whether their counts were scaled for multiplexing), errors and warnings of each \
         experiment.",
        "header",
    ),
    entry(
        "sample_list",
        &[],
        "sample_list",
        "list the samples",
        "List the samples of each experiment and which ones are selected.",
        "sample_list",
    ),
    entry(
        "sample_select",
        &[],
        "sample_select LIST",
        "keep only events of some samples",
        "Keep only events in the samples of LIST: all, or numbers and ranges like 1-3,5 \
         (numbers count from 1).",
        "sample_select 2-4",
    ),
    entry(
        "thread_list",
        &[],
        "thread_list",
        "list the threads",
        "List the threads (number, tid, events, CPU) and which ones are selected. Numbers are the debugger's t@N: 1 the main thread, then in order of creation.",
        "thread_list",
    ),
    entry(
        "thread_select",
        &[],
        "thread_select LIST",
        "keep only events of some threads",
        "Keep only events of the threads of LIST: all, or numbers and ranges like 1-3,5 \
         (thread numbers from thread_list).",
        "thread_select 1,3",
    ),
    entry(
        "cpu_list",
        &[],
        "cpu_list",
        "list the CPUs",
        "List the CPUs events were recorded on and which ones are selected.",
        "cpu_list",
    ),
    entry(
        "cpu_select",
        &[],
        "cpu_select LIST",
        "keep only events on some CPUs",
        "Keep only events recorded on the CPUs of LIST: all, or CPU numbers (from 0, as the \
         kernel counts them) and ranges like 0-3,5.",
        "cpu_select all",
    ),
    entry(
        "experiment_list",
        &["exp_list"],
        "experiment_list",
        "list the experiments",
        "List the loaded experiments, numbered from 1 (a founder's descendants follow it): \
         whether selected, process id, host and MPI rank (when the experiment records them), \
         the experiment group (each argument of rdbx analyze: an experiment with its \
         descendants, or a .erg file), when it started, how long it ran, how it ended (exit \
         status; killed by a signal; or no end record: killed with its launcher, or still \
         running), its events and CPU time, its path and command.",
        "experiment_list",
    ),
    entry(
        "experiment_select",
        &[],
        "experiment_select LIST | rank LIST | host NAME[,NAME...]",
        "keep only events of some experiments",
        "Keep only the events of the experiments in LIST: all, or numbers and ranges like \
         1-3,5 as experiment_list numbers them; or of the MPI ranks in LIST (from 0); or of \
         the experiments recorded on the hosts named. Every view, and each group in compare \
         mode, then counts only those experiments.",
        "experiment_select 2,4-6",
    ),
    entry(
        "compare",
        &[],
        "compare [on | off | delta | ratio]",
        "show or choose compare mode",
        "With two or more experiment groups loaded (each argument of rdbx analyze is one: an \
         experiment with its descendants, or a .erg file), show each group's metrics side by \
         side in functions, lines, pcs, objects, csingle and callers-callees: on shows each \
         group's values; delta shows the first group's (the baseline) and the others' \
         differences from it; ratio the baseline's and the others' ratios to it (x 1.000 when \
         both are 0, >99.999 when only the baseline is). Percentages are of each group's own \
         total. Rows are sorted by the baseline's sort metric, then by the others'. In compare \
         mode flamegraph draws the difference between the baseline and the second group \
         (red: grew, blue: shrank) and collapsed writes both values per stack. off sums \
         every experiment again; no argument shows the mode.",
        "compare ratio",
    ),
    entry(
        "filters",
        &[],
        "filters [EXPR | none]",
        "show, set or clear the event filter",
        "Keep only events for which EXPR is true. EXPR is C-like over the fields time (seconds), \
         thread, tid, cpu, sample, experiment, TSTAMP (ns), THRID, CPUID, SAMPLE, EXPID, with \
         numbers, == != < <= > >=, && || !, + - * / and parentheses. none clears the filter; \
         no argument shows it.",
        "filters thread == 2 && time > 1.5",
    ),
    entry(
        "name",
        &[],
        "name [long | short | mangled]",
        "show or choose how function names look",
        "long: full demangled names with arguments; short: without arguments; mangled: as in \
         the symbol table. With no argument, show the current style.",
        "name short",
    ),
    entry(
        "object_hide",
        &[],
        "object_hide NAME...",
        "fold load objects into one entry each",
        "Show the functions of each named load object as one <NAME> entry.",
        "object_hide libc.so.6",
    ),
    entry(
        "object_show",
        &[],
        "object_show NAME... | all",
        "show load objects' functions again",
        "Undo object_hide for the named load objects, or for all of them.",
        "object_show all",
    ),
    entry(
        "object_list",
        &[],
        "object_list",
        "list load objects and whether they are hidden",
        "List the load objects and whether each one's functions are shown or hidden.",
        "object_list",
    ),
    entry(
        "pathmap",
        &[],
        "pathmap [OLD NEW]",
        "show or add a source path prefix mapping",
        "Look for source files whose path starts with OLD under NEW instead. With no \
         arguments, show the mappings.",
        "pathmap /build/src /home/me/src",
    ),
    entry(
        "setpath",
        &[],
        "setpath [DIR[:DIR...]]",
        "show or set the source search path",
        "Replace the directories searched for source files. With no argument, show them.",
        "setpath /home/me/src:/usr/src",
    ),
    entry(
        "addpath",
        &[],
        "addpath DIR[:DIR...]",
        "add to the source search path",
        "Append directories to the source search path.",
        "addpath ../lib",
    ),
    entry(
        "inlines",
        &[],
        "inlines [on | off]",
        "show or choose whether inlined functions are their own entries",
        "off (default): an inlined function's time goes to its call site. on: each inlined \
         function is a function of its own.",
        "inlines on",
    ),
    entry(
        "en_desc",
        &[],
        "en_desc [on | off]",
        "show or choose whether descendant processes are read",
        "Whether experiments of descendant processes are loaded along with the founder's.",
        "en_desc off",
    ),
    entry(
        "format",
        &[],
        "format [text | json]",
        "show or choose the output format",
        "text: er_print-like aligned tables; json: one JSON document per command (a listing's report; {\"report\": COMMAND, \"message\": TEXT} for the others).",
        "format json",
    ),
    entry(
        "flamegraph",
        &[],
        "flamegraph FILE.svg",
        "write a flame graph",
        "Write an SVG flame graph of the selected events' stacks to FILE.svg, of the sort \
         metric (CPU time, or a heap metric: sort i.heapleakbytes first for a flame graph of \
         the bytes leaked; a counter's events: sort e.cycles; not a ratio, cpi or ipc). In \
         compare mode, the difference of the second group from the baseline: frames as wide \
         as the second group's values, red where their own value grew, blue where it shrank.",
        "flamegraph out.svg",
    ),
    entry(
        "collapsed",
        &[],
        "collapsed FILE",
        "write collapsed stacks",
        "Write the selected events' stacks in the collapsed format (one line per stack: \
         frames joined by ';', then a space and the sort metric's value: microseconds of CPU \
         time, or a heap metric's count or bytes, or a counter's events) to FILE. In compare \
         mode each line has the baseline's value, then the second group's (the differential \
         format of flamegraph.pl and inferno).",
        "collapsed out.folded",
    ),
    entry(
        "help",
        &[],
        "help [COMMAND]",
        "list analysis commands or describe one",
        "With no argument, one line per command; with a command name, its usage and description.",
        "help metrics",
    ),
    entry(
        "quit",
        &["exit"],
        "quit",
        "leave the analyzer",
        "Leave the analysis REPL.",
        "quit",
    ),
];

/// The analysis command table, in the order of `help`.
pub fn analysis_help() -> &'static [CommandHelp] {
    ANALYSIS_COMMANDS
}

/// Every command spelling (names and aliases), sorted, for tab completion.
pub fn analysis_command_names() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names: Vec<&'static str> = ANALYSIS_COMMANDS
            .iter()
            .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    })
}

/// The table entry for a name or alias.
pub fn find_analysis_help(name: &str) -> Option<&'static CommandHelp> {
    let name = name.trim();
    ANALYSIS_COMMANDS
        .iter()
        .find(|c| c.name == name || c.aliases.contains(&name))
}

/// One line per command: name, aliases and summary.
pub fn analysis_help_summary() -> String {
    let mut out = String::new();
    for command in ANALYSIS_COMMANDS {
        let name = if command.aliases.is_empty() {
            command.name.to_string()
        } else {
            format!("{} ({})", command.name, command.aliases.join(", "))
        };
        out.push_str(&format!("{name:<36} {}\n", command.summary));
    }
    out
}

/// Usage, aliases, description and example of a command, by name or alias.
pub fn analysis_help_for(name: &str) -> Option<String> {
    find_analysis_help(name).map(entry_text)
}

/// The usage line of a command in the table ("" for none).
pub(crate) fn analysis_usage(name: &str) -> &'static str {
    find_analysis_help(name).map_or("", |c| c.usage)
}

/// The analysis command spelling nearest to `word`, if near enough to be a
/// typo (same rule as the debugger's suggestions).
pub(crate) fn suggest_analysis(word: &str) -> Option<String> {
    nearest_spelling(word, analysis_command_names())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        let mut all: Vec<&str> = ANALYSIS_COMMANDS
            .iter()
            .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
            .collect();
        let count = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), count, "a spelling names two commands");
    }

    #[test]
    fn every_entry_is_complete_one_line_and_one_word() {
        for c in ANALYSIS_COMMANDS {
            for text in [c.usage, c.summary, c.description, c.example] {
                assert!(!text.is_empty() && !text.contains('\n'), "{}", c.name);
            }
            assert!(!c.name.contains(' '), "{}", c.name);
            assert!(c.usage.starts_with(c.name), "{}", c.name);
        }
    }

    #[test]
    fn help_by_name_and_alias() {
        let text = analysis_help_for("exit").unwrap();
        assert!(text.starts_with("usage: quit\naliases: exit\n"), "{text}");
        assert_eq!(
            analysis_help_for("callers_callees"),
            analysis_help_for("callers-callees")
        );
        assert!(analysis_help_for(" metrics ")
            .unwrap()
            .contains("example: metrics"));
        assert!(analysis_help_for("nosuch").is_none());
        let summary = analysis_help_summary();
        assert_eq!(summary.lines().count(), ANALYSIS_COMMANDS.len());
        assert!(summary.contains("callers-callees (callers_callees)"));
    }

    #[test]
    fn completion_names_are_sorted_and_complete() {
        let names = analysis_command_names();
        for name in ["functions", "callers_callees", "exit", "quit", "en_desc"] {
            assert!(names.contains(&name), "{name}");
        }
        assert!(names.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn every_example_parses_to_a_command_of_its_name() {
        for entry in ANALYSIS_COMMANDS {
            let command = crate::parse_analysis(entry.example)
                .unwrap_or_else(|e| panic!("{}: {e}", entry.example));
            assert_eq!(command.name(), entry.name, "{}", entry.example);
        }
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest_analysis("fucntions").as_deref(), Some("functions"));
        assert_eq!(suggest_analysis("metric").as_deref(), Some("metrics"));
        assert_eq!(
            suggest_analysis("thread_selct").as_deref(),
            Some("thread_select")
        );
        assert_eq!(suggest_analysis("xyzzy"), None);
    }
}
