//! The markdown table writer shared by graphfleet-bench's REPORT.md and the operator's
//! LoadTest report ConfigMap (their charts are [`crate::charts`]').

/// A markdown table with aligned columns; `right[i]` right-aligns column i (a missing entry
/// left-aligns). Rows shorter than the header are padded with empty cells.
pub fn table(headers: &[&str], right: &[bool], rows: &[Vec<String>]) -> String {
    // At least 2: an alignment rule (`:-`, `-:`) takes two characters.
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count().max(2)).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let right_at = |i: usize| right.get(i).copied().unwrap_or(false);
    let line = |cells: &[String]| {
        let padded: Vec<String> = widths
            .iter()
            .enumerate()
            .map(|(i, &w)| {
                let c = cells.get(i).map_or("", String::as_str);
                if right_at(i) {
                    format!("{c:>w$}")
                } else {
                    format!("{c:<w$}")
                }
            })
            .collect();
        format!("| {} |\n", padded.join(" | "))
    };
    let header: Vec<String> = headers.iter().map(|h| (*h).to_owned()).collect();
    let mut out = line(&header);
    let rule: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            let dashes = "-".repeat(w - 1);
            if right_at(i) {
                format!("{dashes}:")
            } else {
                format!(":{dashes}")
            }
        })
        .collect();
    out.push_str(&format!("| {} |\n", rule.join(" | ")));
    for row in rows {
        out.push_str(&line(row));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_like_the_reference_reports() {
        let t = table(
            &["Gateway", "Min"],
            &[false, true],
            &[
                vec!["Hive Router".into(), "21.1".into()],
                vec!["x".into(), "125.0".into()],
            ],
        );
        assert_eq!(
            t,
            "| Gateway     |   Min |\n| :---------- | ----: |\n| Hive Router |  21.1 |\n| x           | 125.0 |\n"
        );
        // Short rows get empty cells; unlisted columns are left-aligned.
        assert_eq!(
            table(&["a", "b"], &[], &[vec!["x".into()]]),
            "| a  | b  |\n| :- | :- |\n| x  |    |\n"
        );
    }
}
