//! An analysis session: the experiments, the settings the analysis
//! language changes (metrics, sort, selections, filters, names, hidden
//! objects, output format) and the execution of each command. The REPL and
//! `rdbx analyze -c` only read lines and print what this returns.

use crate::compare::{self, Comparison};
use crate::data_views::{DataSources, DataView, NO_DATA_ADDRESSES};
use crate::groups::ExperimentGroups;
use crate::info;
use crate::load::{load_with, EventDetail};
use crate::metrics::{View, ViewSettings, Weights};
use crate::model::*;
use crate::report::{self, Context, MetricColumn, MetricParts, Report, ReportSettings, SortKey};
use crate::{export, Result};
use commands::{
    AnalysisCommand, CompareMode, ExperimentSelection, FilterExpr, FilterField, FilterSetting,
    FunctionRef, ListSelection, MetricName, MetricSpec, ObjectSelection, OutputFormat, SortSpec,
};
use std::path::{Path, PathBuf};

/// What a command produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Text to print (may be empty).
    Output(String),
    /// With `format json`: the command's document (a listing's report, or
    /// `{"report": COMMAND, "message": TEXT}` for the other commands).
    Json(serde_json::Value),
    /// `quit`: leave the analysis REPL.
    Quit,
}

/// What a command shows: a listing, a listing's text to be written as it
/// is made, or a message.
enum Shown {
    Report(Report),
    Stream(report::TextStream),
    Message(String),
}

/// A command's result: an outcome, or text to write as it is made.
enum Produced {
    Outcome(Outcome),
    Stream(report::TextStream),
}

/// Everything a session remembers between commands.
pub struct Analysis {
    /// As given: experiments and group files, each an experiment group.
    arguments: Vec<PathBuf>,
    descendants: bool,
    model: Model,
    /// Which experiments of the model each argument stands for.
    groups: ExperimentGroups,
    experiments: ExperimentSelection,
    compare: CompareMode,
    /// Keep each clock event (a filter on time needs them), even when
    /// there are enough to be merged.
    each_event: bool,
    metrics: MetricSpec,
    sort: SortSpec,
    /// The user chose the metrics or the sort: a reload keeps them (else
    /// they follow the data, which may gain heap events at a later stop).
    metrics_chosen: bool,
    settings: ReportSettings,
    view_settings: ViewSettings,
    samples: ListSelection,
    threads: ListSelection,
    cpus: ListSelection,
    filter: Option<FilterExpr>,
    format: OutputFormat,
    pathmaps: Vec<(String, String)>,
    search_path: Vec<PathBuf>,
    view: Option<View>,
    /// What the data-object views read besides the model, once read.
    data: Option<DataSources>,
}

impl Analysis {
    /// Opens `paths` (experiments, with their descendants, and experiment
    /// group files).
    pub fn open(paths: &[PathBuf]) -> Result<Analysis> {
        let (model, groups) = load_groups(paths, true, EventDetail::Auto)?;
        let metrics = default_metrics(&model);
        let sort = metrics.default_sort();
        let mut analysis = Analysis {
            arguments: paths.to_vec(),
            descendants: true,
            model,
            groups,
            experiments: ExperimentSelection::Numbers(ListSelection::All),
            compare: CompareMode::Off,
            each_event: false,
            settings: ReportSettings {
                text_only: true,
                ..ReportSettings::default()
            },
            metrics,
            sort,
            metrics_chosen: false,
            view_settings: ViewSettings::default(),
            samples: ListSelection::All,
            threads: ListSelection::All,
            cpus: ListSelection::All,
            filter: None,
            format: OutputFormat::Text,
            pathmaps: Vec::new(),
            search_path: Vec::new(),
            view: None,
            data: None,
        };
        analysis.apply_metrics();
        Ok(analysis)
    }

    /// Reads the experiments again (a live experiment grows between
    /// stops); settings are kept, hidden objects by name.
    pub fn reload(&mut self) -> Result<()> {
        let hidden: Vec<PathBuf> = self
            .view_settings
            .hidden_objects
            .iter()
            .map(|&o| self.model.object(o).path.clone())
            .collect();
        let detail = match self.each_event {
            true => EventDetail::Each,
            false => EventDetail::Auto,
        };
        (self.model, self.groups) = load_groups(&self.arguments, self.descendants, detail)?;
        self.view_settings.hidden_objects = hidden
            .iter()
            .filter_map(|p| self.model.objects.iter().position(|o| &o.path == p))
            .map(|i| i as ObjectId)
            .collect();
        self.view = None;
        self.data = None;
        if !self.metrics_chosen {
            self.metrics = default_metrics(&self.model);
            self.sort = self.metrics.default_sort();
            self.apply_metrics();
        }
        Ok(())
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Problems met loading the experiments.
    pub fn warnings(&self) -> &[String] {
        &self.model.warnings
    }

    pub fn format(&self) -> OutputFormat {
        self.format
    }

    pub fn set_format(&mut self, format: OutputFormat) {
        self.format = format;
        self.settings.text_only = format == OutputFormat::Text;
    }

    /// Parses and runs one line.
    pub fn run_line(&mut self, line: &str) -> std::result::Result<Outcome, String> {
        let command = commands::parse_analysis(line).map_err(|e| e.to_string())?;
        self.execute(&command)
    }

    /// Runs one line, writing what it shows as text to `out` as it is made
    /// (a listing of millions of rows is never held whole); returns
    /// `Outcome::Output` with nothing left to print, or the JSON document,
    /// or `Quit`.
    pub fn run_line_to(
        &mut self,
        line: &str,
        out: &mut dyn std::io::Write,
    ) -> std::result::Result<Outcome, String> {
        let command = commands::parse_analysis(line).map_err(|e| e.to_string())?;
        let write_error = |e: std::io::Error| format!("cannot write the output: {e}");
        match self.shown(&command, true)? {
            Produced::Stream(stream) => stream(out).map_err(write_error)?,
            Produced::Outcome(Outcome::Output(text)) => {
                out.write_all(text.as_bytes()).map_err(write_error)?
            }
            Produced::Outcome(other) => return Ok(other),
        }
        Ok(Outcome::Output(String::new()))
    }

    /// Runs one command. Errors are one-line messages.
    pub fn execute(&mut self, command: &AnalysisCommand) -> std::result::Result<Outcome, String> {
        match self.shown(command, false)? {
            Produced::Outcome(outcome) => Ok(outcome),
            Produced::Stream(stream) => {
                let mut text = Vec::new();
                stream(&mut text).map_err(|e| e.to_string())?;
                Ok(Outcome::Output(String::from_utf8_lossy(&text).into_owned()))
            }
        }
    }

    /// Runs one command; with `streaming`, a long listing's text may come
    /// as a stream.
    fn shown(
        &mut self,
        command: &AnalysisCommand,
        streaming: bool,
    ) -> std::result::Result<Produced, String> {
        use AnalysisCommand as C;
        let shown = match command {
            C::Nothing => return Ok(Produced::Outcome(Outcome::Output(String::new()))),
            C::Quit => return Ok(Produced::Outcome(Outcome::Quit)),
            C::Functions => self.listing(report::functions, compare::functions),
            C::Objects => self.listing(report::objects, compare::objects),
            C::Lines => self.listing(report::lines, compare::lines),
            C::Pcs => self.listing(report::pcs, compare::pcs),
            C::FSummary => self.report(report::fsummary),
            C::CallersCallees => {
                self.listing(report::callers_callees_all, compare::callers_callees_all)
            }
            C::CallTree if streaming && self.format == OutputFormat::Text => {
                Shown::Stream(self.with_context(false, report::calltree_stream))
            }
            C::CallTree => self.report(report::calltree),
            C::FSingle(f) => match self.pick_function(f)? {
                Ok(id) => self.report(|ctx| {
                    let value = crate::metrics::function_metrics(ctx.view, ctx.weights)
                        .get(&id)
                        .copied()
                        .unwrap_or_default();
                    report::function_summary(ctx, id, value)
                }),
                Err(choices) => Shown::Message(choices),
            },
            C::CSingle(f) => match self.pick_function(f)? {
                Ok(id) => match self.group_weights() {
                    None => self.report(|ctx| report::callers_callees_of(ctx, id)),
                    Some(weights) => self.compared(weights, |ctx, cmp| {
                        compare::callers_callees_of(ctx, cmp, id)
                    }),
                },
                Err(choices) => Shown::Message(choices),
            },
            C::Source(f) => self.annotate(f, false)?,
            C::Disasm(f) => self.annotate(f, true)?,
            C::Overview => self.report(info::overview),
            C::Leaks | C::Allocs if streaming && self.format == OutputFormat::Text => {
                let what = match command {
                    C::Leaks => crate::heap_report::HeapListing::Leaks,
                    _ => crate::heap_report::HeapListing::Allocations,
                };
                let limit = self.settings.limit;
                Shown::Stream(crate::heap_report::listing_stream(
                    &self.model,
                    what,
                    limit,
                )?)
            }
            C::Leaks => {
                let form = self.listing_form();
                self.heap_report(|model, limit| {
                    let what = crate::heap_report::HeapListing::Leaks;
                    crate::heap_report::listing_as(model, what, limit, form)
                })?
            }
            C::Allocs => {
                let form = self.listing_form();
                self.heap_report(|model, limit| {
                    let what = crate::heap_report::HeapListing::Allocations;
                    crate::heap_report::listing_as(model, what, limit, form)
                })?
            }
            C::Heap => self.heap_report(|model, _| crate::heap_report::statistics(model))?,
            C::IoActivity => self.calls_report(crate::io::activity),
            C::IoDetail => self.calls_report(crate::io::detail),
            C::IoCallStack => self.calls_report(crate::io::callstacks),
            C::IoStat => self.calls_report(crate::io::statistics),
            C::MpiFunctions => self.calls_report(crate::mpi::functions),
            C::MpiRanks => self.calls_report(crate::mpi::ranks),
            C::MpiMatrix => self.calls_report(crate::mpi::matrix),
            C::SyncObjects => self.calls_report(crate::sync_objects::objects),
            C::DataObjects => self.data_view(DataView::Objects)?,
            C::DataSingle(name) => self.data_view(DataView::Single(name))?,
            C::DataLayout => self.data_view(DataView::Layout)?,
            C::Statistics => {
                let samples = self.samples.clone();
                let kept = self.kept_experiments();
                self.report(|ctx| info::statistics(ctx, &samples, &kept))
            }
            C::Header => self.report(info::header),
            C::ExperimentList => {
                let (groups, kept) = (self.groups.clone(), self.kept_experiments());
                self.report_all(|ctx| info::experiment_list(ctx, &groups, &kept))
            }
            C::SampleList => {
                let selected = self.samples.clone();
                self.report_all(|ctx| info::sample_list(ctx, &selected))
            }
            C::ThreadList => {
                let selected = self.threads.clone();
                self.report_all(|ctx| info::thread_list(ctx, &selected))
            }
            C::CpuList => {
                let selected = self.cpus.clone();
                self.report_all(|ctx| info::cpu_list(ctx, &selected))
            }
            C::ObjectList => {
                let hidden = self.view_settings.hidden_objects.clone();
                self.report(|ctx| info::object_list(ctx, &hidden))
            }
            _ => Shown::Message(self.change_setting(command)?),
        };
        Ok(Produced::Outcome(match (shown, self.format) {
            (Shown::Stream(stream), _) => return Ok(Produced::Stream(stream)),
            (Shown::Report(report), OutputFormat::Text) => Outcome::Output(report.text),
            (Shown::Report(report), OutputFormat::Json) => Outcome::Json(report.json),
            (Shown::Message(text), OutputFormat::Text) => Outcome::Output(text),
            (Shown::Message(text), OutputFormat::Json) => Outcome::Json(serde_json::json!({
                "report": command.name(),
                "message": text.trim_end(),
            })),
        }))
    }

    /// A heap-tracing listing (text, JSON), as a report.
    /// The forms of a heap listing to make: only the text when only the
    /// text will be shown (a listing of a million stacks is gigabytes of
    /// JSON values).
    fn listing_form(&self) -> crate::heap_report::ListingForm {
        match self.settings.text_only {
            true => crate::heap_report::ListingForm::Text,
            false => crate::heap_report::ListingForm::Both,
        }
    }

    fn heap_report(
        &self,
        make: impl FnOnce(
            &Model,
            Option<usize>,
        ) -> std::result::Result<(String, serde_json::Value), String>,
    ) -> std::result::Result<Shown, String> {
        let (text, json) = make(&self.model, self.settings.limit)?;
        Ok(Shown::Report(report::Report { text, json }))
    }

    /// The commands that change or show a setting (and `help` and the
    /// exports, which say what they did): the message to show.
    fn change_setting(&mut self, command: &AnalysisCommand) -> std::result::Result<String, String> {
        use AnalysisCommand as C;
        Ok(match command {
            C::Help(topic) => help(topic.as_deref())?,
            C::SampleSelect(list) => {
                self.samples = list.clone();
                format!("samples selected: {list}\n")
            }
            C::ThreadSelect(list) => {
                self.threads = list.clone();
                format!("threads selected: {list}\n")
            }
            C::CpuSelect(list) => {
                self.cpus = list.clone();
                format!("cpus selected: {list}\n")
            }
            C::ExperimentSelect(selection) => self.select_experiments(selection)?,
            C::Compare(None) => format!("compare: {}\n", self.compare),
            C::Compare(Some(mode)) => {
                if *mode != CompareMode::Off && self.groups.len() < 2 {
                    return Err(format!(
                        "compare needs two or more experiment groups (each argument of rdbx \
                         analyze is one: an experiment with its descendants, or a .erg file); \
                         {} loaded",
                        self.groups.len()
                    ));
                }
                self.compare = *mode;
                format!("compare: {mode}\n")
            }
            C::Filters(None) => match &self.filter {
                Some(f) => format!("filter: {f}\n"),
                None => "no filter\n".to_string(),
            },
            C::Filters(Some(FilterSetting::Clear)) => {
                self.filter = None;
                "filter cleared\n".to_string()
            }
            C::Filters(Some(FilterSetting::Expr(expr))) => {
                if self.model.events_merged && mentions_time(expr) {
                    // Merged events keep no time of their own: read each.
                    self.each_event = true;
                    self.reload().map_err(|e| e.to_string())?;
                }
                self.filter = Some(expr.clone());
                format!("filter: {expr}\n")
            }
            C::Metrics(None) => format!("current metrics: {}\n", self.metrics),
            C::Metrics(Some(spec)) => {
                for item in &spec.items {
                    resolve(&self.model, item.metric)?;
                }
                self.metrics = spec.clone();
                self.metrics_chosen = true;
                // As er_print: a sort metric no longer shown gives way to
                // the new list's first.
                let shown = spec.items.iter().any(|item| {
                    item.is_visible()
                        && item.metric == self.sort.metric
                        && self.sort.kind.is_none_or(|k| item.kinds.contains(k))
                });
                if !shown && self.sort.kind.is_some() {
                    self.sort = spec.default_sort();
                }
                self.apply_metrics();
                format!("current metrics: {}\n", self.metrics)
            }
            C::Sort(None) => format!("current sort: {}\n", self.sort),
            C::Sort(Some(spec)) => {
                resolve(&self.model, spec.metric)?;
                self.sort = *spec;
                self.metrics_chosen = true;
                self.apply_metrics();
                format!("current sort: {}\n", self.sort)
            }
            C::Limit(None) => match self.settings.limit {
                Some(n) => format!("limit: {n}\n"),
                None => "limit: none\n".to_string(),
            },
            C::Limit(Some(n)) => {
                self.settings.limit = (*n > 0).then(|| usize::try_from(*n).unwrap_or(usize::MAX));
                match n {
                    0 => "limit: none\n".to_string(),
                    n => format!("limit: {n}\n"),
                }
            }
            C::Name(None) => format!("name: {}\n", self.settings.names),
            C::Name(Some(style)) => {
                self.settings.names = *style;
                format!("name: {style}\n")
            }
            C::Format(None) => format!("format: {}\n", self.format),
            C::Format(Some(format)) => {
                self.set_format(*format);
                format!("format: {format}\n")
            }
            C::Inlines(None) => format!("inlines: {}\n", on_off(self.view_settings.inlines)),
            C::Inlines(Some(on)) => {
                self.view_settings.inlines = *on;
                self.view = None;
                format!("inlines: {}\n", on_off(*on))
            }
            C::EnDesc(None) => format!("en_desc: {}\n", on_off(self.descendants)),
            C::EnDesc(Some(on)) => {
                self.descendants = *on;
                self.reload().map_err(|e| e.to_string())?;
                format!("en_desc: {}\n", on_off(*on))
            }
            C::ObjectHide(names) => self.hide_objects(names, true)?,
            C::ObjectShow(ObjectSelection::All) => {
                self.view_settings.hidden_objects.clear();
                self.view = None;
                "all load objects shown\n".to_string()
            }
            C::ObjectShow(ObjectSelection::Names(names)) => self.hide_objects(names, false)?,
            C::PathMap(None) => match self.pathmaps.is_empty() {
                true => "no path maps\n".to_string(),
                false => self
                    .pathmaps
                    .iter()
                    .map(|(from, to)| format!("pathmap {from} {to}\n"))
                    .collect(),
            },
            C::PathMap(Some(map)) => {
                self.pathmaps.push((map.from.clone(), map.to.clone()));
                format!("pathmap {} {}\n", map.from, map.to)
            }
            C::SetPath(None) => format!("search path: {}\n", self.search_path_text()),
            C::SetPath(Some(dirs)) => {
                self.search_path = dirs.iter().map(PathBuf::from).collect();
                format!("search path: {}\n", self.search_path_text())
            }
            C::AddPath(dirs) => {
                self.search_path.extend(dirs.iter().map(PathBuf::from));
                format!("search path: {}\n", self.search_path_text())
            }
            C::FlameGraph(file) => self.export(file, true)?,
            C::Collapsed(file) => self.export(file, false)?,
            // Listings are rendered by `execute`.
            _ => String::new(),
        })
    }

    fn search_path_text(&self) -> String {
        if self.search_path.is_empty() {
            return "(none)".to_string();
        }
        let dirs: Vec<String> = self
            .search_path
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        dirs.join(":")
    }

    /// Turns the metric spec and sort into report columns, their counters
    /// resolved (one the experiments no longer have, after a reload,
    /// shows nothing).
    fn apply_metrics(&mut self) {
        let model = &self.model;
        let resolved = |metric| resolve(model, metric).unwrap_or(metric);
        self.settings.columns = self
            .metrics
            .items
            .iter()
            .filter(|item| item.is_visible())
            .flat_map(|item| {
                let kinds = [
                    commands::MetricKind::Exclusive,
                    commands::MetricKind::Inclusive,
                    commands::MetricKind::Attributed,
                ];
                let columns: Vec<MetricColumn> = match item.metric {
                    MetricName::Name => vec![MetricColumn::Name],
                    MetricName::Size => vec![MetricColumn::Size],
                    MetricName::Address => vec![MetricColumn::Address],
                    metric => kinds
                        .into_iter()
                        .filter(|k| item.kinds.contains(*k))
                        .map(|kind| MetricColumn::Metric {
                            metric: resolved(metric),
                            kind,
                            parts: MetricParts {
                                value: item.show_value,
                                percent: item.show_percent,
                                count: item.show_count,
                            },
                        })
                        .collect(),
                };
                columns
            })
            .collect();
        self.settings.sort = match (self.sort.kind, self.sort.metric) {
            (Some(kind), metric) => SortKey::Metric(resolved(metric), kind),
            (None, MetricName::Size) => SortKey::Size,
            (None, MetricName::Address) => SortKey::Address,
            (None, _) => SortKey::Name,
        };
    }

    /// Keeps only the experiments `selection` names; refused when it
    /// names none of those loaded.
    fn select_experiments(
        &mut self,
        selection: &ExperimentSelection,
    ) -> std::result::Result<String, String> {
        let kept = crate::groups::kept_experiments(&self.model, selection);
        let count = kept.iter().filter(|&&k| k).count();
        if count == 0 {
            return Err(format!(
                "experiment_select {selection}: no such experiment among the {} loaded (see \
                 experiment_list)",
                kept.len()
            ));
        }
        self.experiments = selection.clone();
        Ok(format!(
            "experiments selected: {selection} ({count} of {})\n",
            kept.len()
        ))
    }

    /// Per experiment of the model: whether `experiment_select` keeps it.
    fn kept_experiments(&self) -> Vec<bool> {
        crate::groups::kept_experiments(&self.model, &self.experiments)
    }

    /// Whether listings show each group side by side.
    fn comparing(&self) -> bool {
        self.compare != CompareMode::Off && self.groups.len() >= 2
    }

    /// In compare mode, each group's selected events summed per stack.
    fn group_weights(&self) -> Option<Vec<Weights>> {
        if !self.comparing() {
            return None;
        }
        let groups = &self.groups;
        let keep = self.selection();
        let weights = (0..groups.len())
            .map(|g| {
                let in_group = |e: &EventEntry| groups.group_of(e.experiment) == g;
                match &keep {
                    None => Weights::new(&self.model, in_group),
                    Some(keep) => Weights::new(&self.model, |e| in_group(e) && keep(e)),
                }
            })
            .collect();
        Some(weights)
    }

    /// A listing, or in compare mode its form with each group side by side.
    fn listing(
        &mut self,
        plain: fn(&Context) -> Report,
        compared: fn(&Context, &Comparison) -> Report,
    ) -> Shown {
        match self.group_weights() {
            None => self.report(plain),
            Some(weights) => self.compared(weights, compared),
        }
    }

    /// A compare-mode report of the groups whose sums are `weights`.
    fn compared(
        &mut self,
        weights: Vec<Weights>,
        make: impl FnOnce(&Context, &Comparison) -> Report,
    ) -> Shown {
        Shown::Report(self.with_comparison(weights, make))
    }

    /// `f` of the comparison of the groups whose sums are `weights`. The
    /// context holds the baseline's sums: compare mode reads each group's
    /// from the comparison, and summing the selection again for the
    /// context would be a pass over every event for nothing.
    fn with_comparison<T>(
        &mut self,
        weights: Vec<Weights>,
        f: impl FnOnce(&Context, &Comparison) -> T,
    ) -> T {
        let groups = self.groups.groups.clone();
        let cmp = Comparison {
            mode: self.compare,
            groups: &groups,
            weights: &weights,
        };
        self.with_weights(&weights[0], |ctx| f(ctx, &cmp))
    }

    /// The events the selections and the filter keep.
    fn weights(&self) -> Weights {
        match self.selection() {
            None => Weights::all(&self.model),
            Some(keep) => Weights::new(&self.model, keep),
        }
    }

    /// Whether the selections and the filter keep an event; None when they
    /// keep every one.
    fn selection(&self) -> Option<impl Fn(&EventEntry) -> bool + '_> {
        let model = &self.model;
        let everything = [&self.samples, &self.threads, &self.cpus]
            .iter()
            .all(|list| matches!(list, ListSelection::All));
        if everything && self.experiments.is_all() && self.filter.is_none() {
            return None;
        }
        let kept = self.kept_experiments();
        // `time` counts from each event's own experiment's start (a
        // descendant starts later than its founder).
        let starts: Vec<u64> = model
            .experiments
            .iter()
            .map(|e| e.start_ns.saturating_sub(model.origin_ns))
            .collect();
        Some(move |event: &EventEntry| {
            let since_start = event.time_ns.saturating_sub(
                starts
                    .get(usize::from(event.experiment))
                    .copied()
                    .unwrap_or(0),
            );
            kept.get(usize::from(event.experiment))
                .copied()
                .unwrap_or(false)
                && self.samples.contains(u64::from(event.sample))
                && self.threads.contains(u64::from(event.thread))
                && self.cpus.contains(u64::from(event.cpu))
                && self.filter.as_ref().is_none_or(|f| {
                    f.eval(&|field| match field {
                        FilterField::Time => since_start as f64 / 1e9,
                        FilterField::Tstamp => since_start as f64,
                        FilterField::Thread => f64::from(event.thread),
                        FilterField::Tid => f64::from(model.tid(event)),
                        FilterField::Cpu => f64::from(event.cpu),
                        FilterField::Sample => f64::from(event.sample),
                        FilterField::Experiment => f64::from(event.experiment) + 1.0,
                    })
                })
        })
    }

    /// A view of the selected traced calls (I/O, waits) that needs no
    /// per-stack sums.
    fn calls_report(&mut self, make: fn(&Context, report::Keep) -> report::Report) -> Shown {
        if self.view.is_none() {
            self.view = Some(View::new(&self.model, &self.view_settings));
        }
        let weights = Weights::default();
        let ctx = Context {
            model: &self.model,
            view: self.view.as_ref().expect("built above"),
            weights: &weights,
            settings: &self.settings,
        };
        let report = match self.selection() {
            None => make(&ctx, &|_| true),
            Some(keep) => make(&ctx, &keep),
        };
        Shown::Report(report)
    }

    /// A data-object view of the selected counter records, sorted by the
    /// sort metric when it is a counter with data addresses (else by the
    /// first such counter).
    fn data_view(&mut self, view: DataView) -> std::result::Result<Shown, String> {
        if self.data.is_none() {
            match DataSources::of(&self.model)? {
                Some(sources) => self.data = Some(sources),
                None => return Ok(Shown::Message(format!("{NO_DATA_ADDRESSES}\n"))),
            }
        }
        let data = self.data.as_ref().expect("read above");
        let sort = match self.sort.metric {
            MetricName::Counter(counter) => data.column_of(counter.name()).unwrap_or(0),
            _ => 0,
        };
        let limit = self.settings.limit;
        let report = match self.selection() {
            None => data.view(&self.model, &|_| true, view, sort, limit),
            Some(keep) => data.view(&self.model, &keep, view, sort, limit),
        }?;
        Ok(Shown::Report(report))
    }

    /// Runs `f` over the selected events.
    fn with_context<T>(&mut self, all_events: bool, f: impl FnOnce(&Context) -> T) -> T {
        let weights = match all_events {
            true => Weights::all(&self.model),
            false => self.weights(),
        };
        self.with_weights(&weights, f)
    }

    /// `f` of the context whose sums are `weights`.
    fn with_weights<T>(&mut self, weights: &Weights, f: impl FnOnce(&Context) -> T) -> T {
        if self.view.is_none() {
            self.view = Some(View::new(&self.model, &self.view_settings));
        }
        let view = self.view.as_ref().expect("built above");
        let ctx = Context {
            model: &self.model,
            view,
            weights,
            settings: &self.settings,
        };
        f(&ctx)
    }

    fn report(&mut self, f: impl FnOnce(&Context) -> Report) -> Shown {
        Shown::Report(self.with_context(false, f))
    }

    /// For the lists of what can be selected: they count every event.
    fn report_all(&mut self, f: impl FnOnce(&Context) -> Report) -> Shown {
        Shown::Report(self.with_context(true, f))
    }

    /// The function `f` names: Ok(Ok(id)), Ok(Err(text listing the
    /// choices)) when several share the name, Err when none has it.
    fn pick_function(
        &self,
        f: &FunctionRef,
    ) -> std::result::Result<std::result::Result<FunctionId, String>, String> {
        let mut found = self.model.functions_named(&f.name);
        found.sort_by_key(|&id| {
            let entry = self.model.function(id);
            (entry.object, entry.address, id)
        });
        match (found.len(), f.index) {
            (0, _) => Err(self.no_such_function(&f.name)),
            (1, None) => Ok(Ok(found[0])),
            (n, Some(i)) if i >= 1 && (i as usize) <= n => Ok(Ok(found[i as usize - 1])),
            (n, Some(i)) => Err(format!(
                "\"{}\" names {n} function(s); there is no number {i}",
                f.name
            )),
            (_, None) => Ok(Err(self.choices(&f.name, &found))),
        }
    }

    fn choices(&self, name: &str, found: &[FunctionId]) -> String {
        let mut text = format!(
            "\"{name}\" names {} functions; add the number of the one you mean:\n",
            found.len()
        );
        for (i, &id) in found.iter().enumerate() {
            let entry = self.model.function(id);
            let object = entry
                .object
                .map(|o| self.model.object(o).name())
                .unwrap_or_default();
            let source = entry
                .source
                .as_ref()
                .map(|s| format!(", {}", s.display()))
                .unwrap_or_default();
            text.push_str(&format!(
                "  {}) {} at 0x{:x} in {object}{source}\n",
                i + 1,
                entry.name,
                entry.address
            ));
        }
        text
    }

    fn no_such_function(&self, name: &str) -> String {
        let mut names: Vec<(f64, &str)> = self
            .model
            .functions
            .iter()
            .map(|f| (strsim::jaro_winkler(name, &f.name), f.name.as_str()))
            .filter(|(score, _)| *score > 0.8)
            .collect();
        names.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        names.dedup_by(|a, b| a.1 == b.1);
        match names.as_slice() {
            [] => format!("no function \"{name}\" in the experiment"),
            nearest => {
                let list: Vec<String> = nearest
                    .iter()
                    .take(3)
                    .map(|(_, n)| format!("\"{n}\""))
                    .collect();
                format!(
                    "no function \"{name}\" in the experiment; did you mean {}?",
                    list.join(" or ")
                )
            }
        }
    }

    fn annotate(
        &mut self,
        target: &FunctionRef,
        disasm: bool,
    ) -> std::result::Result<Shown, String> {
        let paths = crate::annotate::SourcePaths {
            pathmaps: self.pathmaps.clone(),
            search: self.search_path.clone(),
        };
        let function = match self.pick_function(target) {
            Ok(Ok(id)) => Some(id),
            Ok(Err(choices)) => return Ok(Shown::Message(choices)),
            Err(_) if looks_like_file(&target.name) => None,
            Err(e) => return Err(e),
        };
        let report = self.with_context(false, |ctx| match (function, disasm) {
            (Some(id), false) => crate::annotate::source_for_function(ctx, id, &paths),
            (Some(id), true) => crate::annotate::disasm_for_function(ctx, id, &paths),
            (None, false) => crate::annotate::source_for_file(ctx, &target.name, &paths),
            (None, true) => crate::annotate::disasm_for_file(ctx, &target.name, &paths),
        })?;
        Ok(Shown::Report(report))
    }

    fn hide_objects(
        &mut self,
        names: &[String],
        hide: bool,
    ) -> std::result::Result<String, String> {
        let mut changed = Vec::new();
        for name in names {
            let matches: Vec<ObjectId> = (0..self.model.objects.len() as ObjectId)
                .filter(|&o| {
                    let object = self.model.object(o);
                    object.name() == *name || object.path == Path::new(name)
                })
                .collect();
            if matches.is_empty() {
                return Err(format!(
                    "no load object \"{name}\" (see object_list for their names)"
                ));
            }
            for o in matches {
                if hide {
                    self.view_settings.hidden_objects.insert(o);
                } else {
                    self.view_settings.hidden_objects.remove(&o);
                }
                changed.push(self.model.object(o).name());
            }
        }
        self.view = None;
        let verb = if hide { "hidden" } else { "shown" };
        Ok(format!("{verb}: {}\n", changed.join(", ")))
    }

    fn export(&mut self, file: &str, svg: bool) -> std::result::Result<String, String> {
        let path = PathBuf::from(file);
        if let Some(weights) = self.group_weights() {
            return self.export_difference(&path, svg, weights);
        }
        let written = self.with_context(false, |ctx| match svg {
            true => export::flamegraph(ctx, &path),
            false => export::collapsed(ctx, &path),
        })?;
        Ok(format!("wrote {} ({written} stacks)\n", path.display()))
    }

    /// In compare mode: the difference of the second group from the
    /// baseline, as a flame graph or collapsed stacks with both values.
    fn export_difference(
        &mut self,
        path: &Path,
        svg: bool,
        weights: Vec<Weights>,
    ) -> std::result::Result<String, String> {
        let written = self.with_comparison(weights, |ctx, cmp| match svg {
            true => export::difference_flamegraph(ctx, cmp, path),
            false => export::difference_collapsed(ctx, cmp, path),
        })?;
        let groups = &self.groups.groups;
        let mut text = format!(
            "wrote {} ({written} stacks): {} against the baseline {}\n",
            path.display(),
            groups[1].name,
            groups[0].name
        );
        if groups.len() > 2 {
            text.push_str("(the groups after the second are not drawn)\n");
        }
        Ok(text)
    }
}

/// The model of the experiments `arguments` name (a group file's
/// experiments read again: a job may have added some), and which of its
/// experiments each argument stands for.
fn load_groups(
    arguments: &[PathBuf],
    descendants: bool,
    detail: EventDetail,
) -> Result<(Model, ExperimentGroups)> {
    let (specs, warnings) = crate::groups::read_arguments(arguments)?;
    let founders: Vec<PathBuf> = specs.iter().flat_map(|g| g.founders.clone()).collect();
    let mut model = load_with(&founders, descendants, detail)?;
    let groups = ExperimentGroups::of(&model, &specs);
    model.warnings.splice(0..0, warnings);
    Ok((model, groups))
}

/// The metrics shown until the user chooses: those of the data loaded.
fn default_metrics(model: &Model) -> MetricSpec {
    MetricSpec::for_data(&commands::RecordedData {
        clock: !model.events.is_empty(),
        sync: !model.sync.is_empty(),
        heap: !model.heap.is_empty(),
        io: !model.io.is_empty(),
        offcpu: !model.offcpu.is_empty(),
        mpi: !model.mpi.is_empty(),
        counters: model.counters.iter().map(|c| c.metric).collect(),
        cycles_and_instructions: model.has_cycles_and_instructions(),
    })
}

/// `metric` as the model computes it: a counter's name resolved to the
/// model's counter of that name; CPI and IPC checked to have their
/// counters. The error names the experiments' counters.
fn resolve(model: &Model, metric: MetricName) -> std::result::Result<MetricName, String> {
    let names = || -> String {
        let names: Vec<&str> = model.counters.iter().map(|c| c.name()).collect();
        match names.is_empty() {
            true => "the experiments recorded no counters".to_string(),
            false => format!("the experiments' counters: {}", names.join(", ")),
        }
    };
    match metric {
        MetricName::Counter(counter) => {
            let found = model.counters.iter().find(|c| c.metric == counter);
            found.map(|c| MetricName::Counter(c.metric)).ok_or_else(|| {
                format!(
                    "no metric or counter \"{}\"; {}{}",
                    counter.name(),
                    names(),
                    kind_letters_hint(model, counter.name())
                )
            })
        }
        MetricName::Cpi | MetricName::Ipc if !model.has_cycles_and_instructions() => Err(format!(
            "{metric} needs a cycles counter and an instructions counter (perf's hardware \
             events 0 and 1); {}",
            names()
        )),
        metric => Ok(metric),
    }
}

/// The counter a name meant when its first letters were taken for kinds
/// (`einsts` is kinds `ei` of `nsts`): how to write it.
fn kind_letters_hint(model: &Model, name: &str) -> String {
    let meant = model.counters.iter().find(|c| {
        c.name()
            .strip_suffix(name)
            .is_some_and(|kinds| !kinds.is_empty() && kinds.chars().all(|k| "eia".contains(k)))
    });
    match meant {
        Some(c) => format!(
            " (a counter whose name begins with e, i or a follows a \".\": e.{})",
            c.metric.spelling()
        ),
        None => String::new(),
    }
}

/// Whether `expr` asks an event's time (`time`, `TSTAMP`).
fn mentions_time(expr: &FilterExpr) -> bool {
    match expr {
        FilterExpr::Number(_) => false,
        FilterExpr::Field(field) => matches!(field, FilterField::Time | FilterField::Tstamp),
        FilterExpr::Unary { operand, .. } => mentions_time(operand),
        FilterExpr::Binary { left, right, .. } => mentions_time(left) || mentions_time(right),
    }
}

fn looks_like_file(name: &str) -> bool {
    name.contains('/') || name.contains('.')
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

fn help(topic: Option<&str>) -> std::result::Result<String, String> {
    match topic {
        None => Ok(commands::analysis_help_summary()),
        Some(name) => commands::analysis_help_for(name)
            .ok_or_else(|| format!("no help for \"{name}\" in the analysis language")),
    }
}

impl std::fmt::Debug for Analysis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analysis")
            .field("arguments", &self.arguments)
            .field("events", &self.model.events.len())
            .finish()
    }
}
