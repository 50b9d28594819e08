//! Index unions: an OR whose every arm is answered by an index range or a primary-key range
//! becomes the k-way merge of the arms' primary keys (`AccessPath::IndexUnion`).
//!
//! Each arm is matched against the primary key and every ready index the hint allows, as a
//! conjunction of its own. The choices of an arm are ranked structurally (an arm its path
//! answers exactly first, then one whose keys come in primary-key order, then the deeper match,
//! then the primary key over an index); the best
//! two of each are combined while the combinations stay few, and the cost model picks among
//! them with the other candidates. A union consumes its OR only when every arm's path answers
//! its arm exactly; otherwise the union yields a superset of the rows and the whole OR stays in
//! the residual filter (an arm's leftover conditions cannot be checked alone: a row may come
//! from another arm).

use std::cmp::Reverse;

use rowdex_catalog::TableDef;

use crate::partial::answers;
use crate::path::{IndexInput, UnionArm};
use crate::predicate::Predicate;
use crate::primary_key::match_key;

/// ORs of one WHERE turned into unions (the first ones).
const MAX_ORS: usize = 4;
/// Arms past which an OR is not turned into a union.
const MAX_ARMS: usize = 64;
/// Choices kept per arm.
const CHOICES_PER_ARM: usize = 2;
/// Unions built from the choices of one OR's arms; past it, each arm's first choice only.
const MAX_UNIONS_PER_OR: usize = 8;

/// The arms of one candidate union, and the position of the OR among the predicates when the
/// union answers it exactly (so it leaves the residual).
#[derive(Debug, Clone)]
pub(crate) struct UnionPath {
    pub arms: Vec<UnionArm>,
    /// The OR answered.
    pub condition: Predicate,
    pub consumed: Option<usize>,
}

/// One way to answer an arm.
struct Choice {
    arm: UnionArm,
    exact: bool,
    /// Its keys come in primary-key order (else they are buffered and sorted first).
    ordered: bool,
    depth: usize,
    by_key: bool,
}

/// The candidate unions of the ORs among `predicates` on `table`, through the indexes the
/// query's hint `allows`.
pub(crate) fn union_paths(
    table: &TableDef,
    predicates: &[Predicate],
    allows: &dyn Fn(&str) -> bool,
) -> Vec<UnionPath> {
    predicates
        .iter()
        .enumerate()
        .filter_map(|(position, predicate)| match predicate {
            Predicate::Or { arms } if arms.len() <= MAX_ARMS => Some((position, predicate, arms)),
            _ => None,
        })
        .take(MAX_ORS)
        .flat_map(|(position, condition, arms)| {
            or_unions(table, (position, condition), arms, allows)
        })
        .collect()
}

/// The unions answering the OR `condition` at `position` with arms `arms`: none when some arm
/// has no path.
fn or_unions(
    table: &TableDef,
    (position, condition): (usize, &Predicate),
    arms: &[Vec<Predicate>],
    allows: &dyn Fn(&str) -> bool,
) -> Vec<UnionPath> {
    let mut choices: Vec<Vec<Choice>> = Vec::with_capacity(arms.len());
    for arm in arms {
        let arm_choices = arm_choices(table, arm, allows);
        if arm_choices.is_empty() {
            return Vec::new();
        }
        choices.push(arm_choices);
    }
    let combinations = choices
        .iter()
        .try_fold(1usize, |product, c| product.checked_mul(c.len()))
        .unwrap_or(usize::MAX);
    if combinations > MAX_UNIONS_PER_OR {
        for arm_choices in &mut choices {
            arm_choices.truncate(1);
        }
    }
    // Every combination, the first choices' first.
    let mut picks: Vec<Vec<usize>> = vec![Vec::new()];
    for arm_choices in &choices {
        picks = picks
            .into_iter()
            .flat_map(|pick| {
                (0..arm_choices.len()).map(move |choice| {
                    let mut next = pick.clone();
                    next.push(choice);
                    next
                })
            })
            .collect();
    }
    picks
        .into_iter()
        .map(|pick| {
            let chosen: Vec<&Choice> = pick
                .iter()
                .zip(&choices)
                .map(|(&choice, arm_choices)| &arm_choices[choice])
                .collect();
            UnionPath {
                arms: chosen.iter().map(|choice| choice.arm.clone()).collect(),
                condition: condition.clone(),
                consumed: chosen.iter().all(|choice| choice.exact).then_some(position),
            }
        })
        .collect()
}

/// The ways to answer one arm (a conjunction), best first (see the module header).
fn arm_choices(table: &TableDef, arm: &[Predicate], allows: &dyn Fn(&str) -> bool) -> Vec<Choice> {
    let mut choices = Vec::new();
    let key = match_key(&table.key, arm);
    if key.depth() > 0 {
        // Key columns are NOT NULL, so IS NOT NULL on one is always true.
        let exact = arm.iter().zip(&key.used).all(|(predicate, used)| {
            *used
                || matches!(predicate, Predicate::IsNotNull { column }
                    if table.key_position(*column).is_some())
        });
        choices.push(Choice {
            depth: key.depth(),
            arm: UnionArm::Key {
                prefixes: key.tuples,
                bound: key.bound,
            },
            exact,
            ordered: true,
            by_key: true,
        });
    }
    for (position, index) in table.ready_indexes() {
        if !allows(&index.name) || !answers(index, arm) {
            continue;
        }
        let matched = match_key(&table.entry_key_columns(index), arm);
        if matched.depth() == 0 {
            continue;
        }
        let (depth, exact) = (matched.depth(), matched.used.iter().all(|used| *used));
        let input = IndexInput {
            index: position,
            prefixes: matched.tuples,
            bound: matched.bound,
        };
        choices.push(Choice {
            depth,
            exact,
            ordered: input.pk_ordered(index),
            arm: UnionArm::Index(input),
            by_key: false,
        });
    }
    choices.sort_by_key(|choice| {
        (
            Reverse(choice.exact),
            Reverse(choice.ordered),
            Reverse(choice.depth),
            Reverse(choice.by_key),
        )
    });
    choices.truncate(CHOICES_PER_ARM);
    choices
}
