//! `analyze [COMMAND]` in the debugger: the analysis language on the
//! current experiment (or the session's last one), also while the target
//! is stopped in the middle of a run — the collector publishes every
//! record as it writes it, so the reader sees all data up to the stop.

use super::Session;
use anyhow::{bail, Result};
use std::path::PathBuf;

impl Session {
    pub(super) fn analyze(&mut self, line: Option<&str>) -> Result<()> {
        let Some(path) = self.experiment.as_ref().map(|e| e.path().to_path_buf()) else {
            bail!("no experiment yet: use \"collector enable\" and run the program first");
        };
        let analysis = self.open_analysis(path)?;
        match line {
            // A failure is reported by run_line itself; `quit` is moot here.
            Some(line) => {
                crate::analyze::run_line(analysis, line);
            }
            None => {
                println!(
                    "Analyzing {} (\"help\" lists the commands, \"quit\" returns to the debugger)",
                    self.analysis
                        .as_ref()
                        .map_or(String::new(), |(p, _)| p.display().to_string())
                );
                let (_, analysis) = self.analysis.as_mut().expect("opened above");
                crate::analyze::repl(analysis);
            }
        }
        Ok(())
    }

    /// The analysis of `path`, reread so it holds everything written so far.
    fn open_analysis(&mut self, path: PathBuf) -> Result<&mut analyzer::Analysis> {
        let reuse = matches!(&self.analysis, Some((p, _)) if *p == path);
        if reuse {
            let (_, analysis) = self.analysis.as_mut().expect("checked");
            analysis.reload()?;
        } else {
            let analysis = analyzer::Analysis::open(std::slice::from_ref(&path))?;
            self.analysis = Some((path, analysis));
        }
        let (_, analysis) = self.analysis.as_mut().expect("set above");
        crate::analyze::print_warnings(analysis);
        Ok(analysis)
    }
}
