//! Aligned text tables in er_print's style: numeric columns right-aligned
//! under two-line headers, the name column last and left-aligned.

/// One column: its header lines and whether cells are right-aligned.
#[derive(Debug, Clone)]
pub struct Column {
    pub header: [String; 2],
    pub right: bool,
}

impl Column {
    pub fn number(top: &str, bottom: &str) -> Column {
        Column {
            header: [top.to_string(), bottom.to_string()],
            right: true,
        }
    }

    pub fn text(top: &str) -> Column {
        Column {
            header: [top.to_string(), String::new()],
            right: false,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<String>>,
    /// Labels over runs of columns: (first column, number of columns, label).
    pub groups: Vec<(usize, usize, String)>,
    /// A second row of labels above `groups` (compare mode: which
    /// experiment group each column shows).
    pub upper_groups: Vec<(usize, usize, String)>,
}

impl Table {
    pub fn new(columns: Vec<Column>) -> Table {
        Table {
            columns,
            rows: Vec::new(),
            groups: Vec::new(),
            upper_groups: Vec::new(),
        }
    }

    /// Puts `label` above `count` columns starting at `first`.
    pub fn group(&mut self, first: usize, count: usize, label: &str) {
        self.groups.push((first, count, label.to_string()));
    }

    /// Puts `label` above the [`Table::group`] labels of `count` columns
    /// starting at `first`.
    pub fn upper_group(&mut self, first: usize, count: usize, label: &str) {
        self.upper_groups.push((first, count, label.to_string()));
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// The table as text, one line per row, no trailing spaces.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_rows_into(&mut out, |each| {
            for row in &self.rows {
                let cells: Vec<&str> = row.iter().map(String::as_str).collect();
                each(&cells);
            }
        });
        out
    }

    /// Appends the table to `out` as [`Table::render`] shows it, with the
    /// rows `rows` makes (not the table's own): it calls its argument with
    /// each row's cells, in order. It is called twice, to measure the
    /// columns and then to write them, so that a listing of millions of
    /// rows is never held as cells.
    pub fn render_rows_into(&self, out: &mut String, rows: impl Fn(&mut dyn FnMut(&[&str]))) {
        self.render_rows_with(rows, &mut |text| {
            out.push_str(text);
            true
        });
    }

    /// [`Table::render_rows_into`] written to `out` a few lines at a time,
    /// so that a listing of millions of rows is never held as text either.
    pub fn render_rows_to(
        &self,
        out: &mut dyn std::io::Write,
        rows: impl Fn(&mut dyn FnMut(&[&str])),
    ) -> std::io::Result<()> {
        let mut failed = None;
        self.render_rows_with(rows, &mut |text| match out.write_all(text.as_bytes()) {
            Ok(()) => true,
            Err(e) => {
                failed = Some(e);
                false
            }
        });
        failed.map_or(Ok(()), Err)
    }

    /// The table's text in pieces of up to 64 KiB, each given to `emit`
    /// (which says false to stop).
    fn render_rows_with(
        &self,
        rows: impl Fn(&mut dyn FnMut(&[&str])),
        emit: &mut dyn FnMut(&str) -> bool,
    ) {
        const PIECE: usize = 64 * 1024;
        let mut widths: Vec<usize> = self
            .columns
            .iter()
            .map(|c| {
                c.header
                    .iter()
                    .map(|h| h.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        rows(&mut |cells| {
            for (width, cell) in widths.iter_mut().zip(cells) {
                *width = (*width).max(cell.chars().count());
            }
        });
        let mut piece = String::new();
        // Widths first (a label wider than its columns widens them), then
        // the lines.
        for labels in [&self.upper_groups, &self.groups] {
            group_line(labels, &mut widths);
        }
        for labels in [&self.upper_groups, &self.groups] {
            if !labels.is_empty() {
                piece.push_str(&group_line(labels, &mut widths));
            }
        }
        let header_rows = if self.columns.iter().any(|c| !c.header[1].is_empty()) {
            2
        } else {
            1
        };
        for line in 0..header_rows {
            let cells: Vec<&str> = self
                .columns
                .iter()
                .map(|c| c.header[line].as_str())
                .collect();
            self.line_into(&cells, &widths, &mut piece);
        }
        let mut going = true;
        rows(&mut |cells| {
            if !going {
                return;
            }
            self.line_into(cells, &widths, &mut piece);
            if piece.len() >= PIECE {
                going = emit(&piece);
                piece.clear();
            }
        });
        if going && !piece.is_empty() {
            emit(&piece);
        }
    }

    fn line_into(&self, cells: &[&str], widths: &[usize], out: &mut String) {
        let start = out.len();
        let last = self.columns.len().saturating_sub(1);
        for (i, column) in self.columns.iter().enumerate() {
            let cell = cells.get(i).copied().unwrap_or("");
            if i > 0 {
                out.push_str("  ");
            }
            if column.right {
                push_spaces(out, widths[i].saturating_sub(cell.chars().count()));
                out.push_str(cell);
            } else {
                out.push_str(cell);
                // The last column's padding would be trimmed at once.
                if i < last {
                    push_spaces(out, widths[i].saturating_sub(cell.chars().count()));
                }
            }
        }
        let kept = out[start..].trim_end().len();
        out.truncate(start + kept);
        out.push('\n');
    }
}

/// The group labels, each left-aligned over its columns; a label wider
/// than its columns widens the first of them.
fn group_line(labels: &[(usize, usize, String)], widths: &mut [usize]) -> String {
    let mut line = String::new();
    let mut column = 0;
    let start_of = |widths: &[usize], c: usize| widths[..c].iter().map(|w| w + 2).sum::<usize>();
    for (first, count, label) in labels {
        let (first, count) = (*first, (*count).max(1));
        if first + count > widths.len() || first < column {
            continue;
        }
        let span = widths[first..first + count].iter().sum::<usize>() + 2 * (count - 1);
        let needed = label.chars().count();
        if needed > span {
            widths[first] += needed - span;
        }
        let start = start_of(widths, first);
        line.push_str(&" ".repeat(start.saturating_sub(line.chars().count())));
        line.push_str(label);
        column = first + count;
    }
    line.push('\n');
    line
}

fn push_spaces(out: &mut String, mut count: usize) {
    const SPACES: &str = "                                                                ";
    while count > 0 {
        let n = count.min(SPACES.len());
        out.push_str(&SPACES[..n]);
        count -= n;
    }
}

/// Seconds with three decimals (er_print's precision for clock data).
pub fn seconds(ns: u64) -> String {
    let mut out = String::new();
    write_seconds(&mut out, ns);
    out
}

/// [`seconds`], appended to `out`.
pub fn write_seconds(out: &mut String, ns: u64) {
    use std::fmt::Write;
    let _ = write!(out, "{:.3}", ns as f64 / 1e9);
}

/// `part` as a percentage of `whole` with two decimals.
pub fn percent(part: u64, whole: u64) -> String {
    let mut out = String::new();
    write_percent(&mut out, part, whole);
    out
}

/// [`percent`], appended to `out`.
pub fn write_percent(out: &mut String, part: u64, whole: u64) {
    use std::fmt::Write;
    if whole == 0 {
        out.push_str("0.00");
        return;
    }
    // Round half away from zero, as people expect (15.625 -> 15.63).
    let hundredths = (part as f64 * 10_000.0 / whole as f64).round();
    // In whole hundredths: listings print millions of these, and integer
    // formatting is several times faster than a float's.
    match hundredths < 1e15 {
        true => {
            let hundredths = hundredths as u64;
            let _ = write!(out, "{}.{:02}", hundredths / 100, hundredths % 100);
        }
        false => {
            let _ = write!(out, "{:.2}", hundredths / 100.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_numbers_right_and_names_left() {
        let mut table = Table::new(vec![Column::number("Excl.", "sec."), Column::text("Name")]);
        table.push(vec!["1.000".into(), "main".into()]);
        table.push(vec!["12.500".into(), "<Total>".into()]);
        assert_eq!(
            table.render(),
            " Excl.  Name\n  sec.\n 1.000  main\n12.500  <Total>\n"
        );
    }

    #[test]
    fn formats_seconds_and_percentages() {
        assert_eq!(seconds(1_234_567_890), "1.235");
        assert_eq!(percent(1, 3), "33.33");
        assert_eq!(percent(5, 0), "0.00");
        assert_eq!(percent(1, 16), "6.25");
        assert_eq!(percent(5, 32), "15.63", "half away from zero");
        assert_eq!(percent(7, 7), "100.00");
        assert_eq!(percent(1, 200_000), "0.00");
        assert_eq!(percent(1, 20_000), "0.01");
        assert_eq!(
            percent(u64::MAX, 1),
            format!("{:.2}", u64::MAX as f64 * 100.0)
        );
        // Whole hundredths print as the float's two decimals would.
        for part in 0..5000u64 {
            let hundredths = (part as f64 * 10_000.0 / 4999.0).round();
            assert_eq!(percent(part, 4999), format!("{:.2}", hundredths / 100.0));
        }
    }
}
