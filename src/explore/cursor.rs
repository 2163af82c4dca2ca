//! The database of the state being expanded, held as the path that
//! reached it ([`super::db::Restore::Savepoint`]): one savepoint per step,
//! all in one transaction that never commits. A successor is one more
//! step in one more savepoint, undone once its key is read; the next state
//! to expand is reached by undoing the steps back to the state the two
//! paths share and running the rest of its path. Breadth-first, the next
//! state is most often a sibling or a cousin, so a move is a few steps,
//! and SQLite keeps its schema and prepared statements throughout.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::db::Db;
use super::world::{ExploreError, World};

/// The path from the initial state to the state the database holds.
pub struct Cursor<S, C> {
    /// Each step's node and choice, from the initial state, and whether
    /// the step ended the transaction (see [`Cursor::child`]): its database
    /// is its parent's.
    path: Vec<(u32, C, bool)>,
    /// The world's state at the initial state, then after each step.
    states: Vec<S>,
}

impl<S: Clone, C: Clone> Cursor<S, C> {
    /// At the initial state, whose world state is `init`.
    pub fn new(init: S) -> Self {
        Cursor {
            path: Vec::new(),
            states: vec![init],
        }
    }

    /// Brings the database to the state reached by `to` (each step's node
    /// and choice, from the initial state).
    ///
    /// # Errors
    /// SQLite refused a savepoint, or a step of the path undid the
    /// transaction (see [`Cursor::child`]).
    pub fn goto<W: World<State = S, Choice = C>>(
        &mut self,
        world: &W,
        db: &Db,
        to: &[(u32, C)],
    ) -> Result<(), ExploreError> {
        let shared = self
            .path
            .iter()
            .zip(to)
            .take_while(|(a, b)| a.0 == b.0)
            .count();
        db.undo(self.path.len() - shared)?;
        self.path.truncate(shared);
        self.states.truncate(shared + 1);
        for (node, choice) in &to[shared..] {
            let (state, undone) = self.step(world, db, choice)?;
            self.path.push((*node, choice.clone(), undone));
            self.states.push(state);
        }
        Ok(())
    }

    /// Takes `choice` from the state the cursor is at, inside a new
    /// savepoint (undone by `db.undo(1)`), and returns the new world state.
    ///
    /// A statement whose conflict clause says ROLLBACK ends the whole
    /// transaction, where in autocommit it undoes only itself: the path is
    /// then run again, so that the database holds what it would hold in
    /// autocommit (the state before the step, the statement undone).
    ///
    /// # Errors
    /// SQLite refused a savepoint, or the path undid the transaction again.
    pub fn child<W: World<State = S, Choice = C>>(
        &mut self,
        world: &W,
        db: &Db,
        choice: &C,
    ) -> Result<S, ExploreError> {
        Ok(self.step(world, db, choice)?.0)
    }

    /// [`Cursor::child`], and whether the step ended the transaction.
    fn step<W: World<State = S, Choice = C>>(
        &mut self,
        world: &W,
        db: &Db,
        choice: &C,
    ) -> Result<(S, bool), ExploreError> {
        db.savepoint()?;
        let mut state = self.states.last().expect("the initial state").clone();
        world.take(&mut state, choice, &db.conn);
        if !db.is_autocommit() {
            return Ok((state, false));
        }
        for (i, (_, c, undone)) in self.path.iter().enumerate() {
            db.savepoint()?;
            // A step that ended the transaction left its parent's rows.
            if !undone {
                world.take(&mut self.states[i].clone(), c, &db.conn);
            }
            if db.is_autocommit() {
                return Err(ExploreError(
                    "a step of the path ended the explorer's transaction when run again".into(),
                ));
            }
        }
        db.savepoint()?;
        Ok((state, true))
    }
}
