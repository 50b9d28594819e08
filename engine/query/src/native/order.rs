//! Whether a plan's rows come out in a query's ORDER BY (read forward or in reverse), so that
//! no sort is needed after the scan.

use std::collections::HashSet;

use rowdex_planner::{AccessPath, Direction, ScanPlan};

use crate::native::compile::OrderItem;

/// `plan`, or `plan` read in reverse, if its rows come out in `order`. A column whose value is
/// settled (fixed by a condition, or matched earlier in the ORDER BY) cannot reorder rows,
/// wherever it appears; once every primary-key column is settled the rows are unique and the
/// rest of the ORDER BY cannot change their order.
pub(crate) fn in_order(
    mut plan: ScanPlan,
    order: &[OrderItem],
    constants: &HashSet<usize>,
) -> Option<ScanPlan> {
    if matches!(plan.path, AccessPath::PointGet { .. }) {
        return Some(plan);
    }
    let layout = plan.order_columns();
    let fixed = plan.fixed_columns();
    let mut settled: HashSet<usize> = constants.clone();
    settled.extend(layout[..fixed.min(layout.len())].iter().map(|k| k.column));
    let key: Vec<usize> = plan.table.key.iter().map(|k| k.column).collect();
    // A merged range scan's order starts after its prefix columns (several values each).
    let mut position = plan.ordered_from();
    let mut reverse: Option<bool> = None;
    for item in order {
        if key.iter().all(|c| settled.contains(c)) {
            break;
        }
        if settled.contains(&item.column) {
            continue;
        }
        while position < layout.len() && settled.contains(&layout[position].column) {
            position += 1;
        }
        let key_column = layout.get(position)?;
        if key_column.column != item.column {
            return None;
        }
        let flip = item.descending != key_column.desc;
        if *reverse.get_or_insert(flip) != flip {
            return None;
        }
        settled.insert(item.column);
        position += 1;
    }
    if reverse == Some(true) {
        // An intersection or a union only merges forward.
        if matches!(
            plan.path,
            AccessPath::IndexIntersection { .. } | AccessPath::IndexUnion { .. }
        ) {
            return None;
        }
        plan.direction = Direction::Reverse;
    }
    Some(plan)
}
