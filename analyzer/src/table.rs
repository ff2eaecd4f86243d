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
}

impl Table {
    pub fn new(columns: Vec<Column>) -> Table {
        Table {
            columns,
            rows: Vec::new(),
            groups: Vec::new(),
        }
    }

    /// Puts `label` above `count` columns starting at `first`.
    pub fn group(&mut self, first: usize, count: usize, label: &str) {
        self.groups.push((first, count, label.to_string()));
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// The table as text, one line per row, no trailing spaces.
    pub fn render(&self) -> String {
        let mut widths: Vec<usize> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let cells = self.rows.iter().filter_map(|r| r.get(i));
                c.header
                    .iter()
                    .chain(cells)
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        if !self.groups.is_empty() {
            out.push_str(&self.group_line(&mut widths));
        }
        let header_rows = if self.columns.iter().any(|c| !c.header[1].is_empty()) {
            2
        } else {
            1
        };
        for line in 0..header_rows {
            let cells: Vec<String> = self
                .columns
                .iter()
                .map(|c| c.header[line].clone())
                .collect();
            out.push_str(&self.line(&cells, &widths));
        }
        for row in &self.rows {
            out.push_str(&self.line(row, &widths));
        }
        out
    }

    /// The group labels, each left-aligned over its columns; a label wider
    /// than its columns widens the first of them.
    fn group_line(&self, widths: &mut [usize]) -> String {
        let mut line = String::new();
        let mut column = 0;
        let start_of =
            |widths: &[usize], c: usize| widths[..c].iter().map(|w| w + 2).sum::<usize>();
        for (first, count, label) in &self.groups {
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

    fn line(&self, cells: &[String], widths: &[usize]) -> String {
        let mut line = String::new();
        for (i, column) in self.columns.iter().enumerate() {
            let cell = cells.get(i).map(String::as_str).unwrap_or("");
            if i > 0 {
                line.push_str("  ");
            }
            let pad = widths[i].saturating_sub(cell.chars().count());
            if column.right {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            }
        }
        let mut line = line.trim_end().to_string();
        line.push('\n');
        line
    }
}

/// Seconds with three decimals (er_print's precision for clock data).
pub fn seconds(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e9)
}

/// `part` as a percentage of `whole` with two decimals.
pub fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "0.00".to_string();
    }
    // Round half away from zero, as people expect (15.625 -> 15.63).
    let hundredths = (part as f64 * 10_000.0 / whole as f64).round();
    format!("{:.2}", hundredths / 100.0)
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
    }
}
