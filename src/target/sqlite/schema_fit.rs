//! Does a target database fit the statement file, before any op runs?
//! A file's schema creates its tables with `CREATE TABLE IF NOT EXISTS`,
//! so on a reused or pre-existing database a table of the same name but
//! another shape stays as it was, and every op would then fail on it, the
//! whole load long. Here the database, once the schema ran, is compared
//! with the schema alone on a scratch in-memory database: each table's
//! columns (name, type affinity, primary key, a required column the
//! schema does not know), and each statement of the file is prepared on
//! it (SQLite resolves tables and columns, triggers included, at prepare
//! time) and must return the columns it returns on the schema alone.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use crate::statements::StatementFile;
use rusqlite::Connection;

/// One way the database differs from what the statement file expects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Misfit {
    /// A column the schema declares is not in the database's table.
    #[error("table {table} has no column {column}, which the schema declares")]
    MissingColumn {
        /// The table.
        table: String,
        /// The column.
        column: String,
    },
    /// A column has another type affinity than the schema declares.
    #[error(
        "table {table}: column {column} is {found:?} ({found_affinity} affinity), the schema \
         declares {declared:?} ({declared_affinity})"
    )]
    Affinity {
        /// The table.
        table: String,
        /// The column.
        column: String,
        /// Its declared type in the database.
        found: String,
        /// Its affinity there.
        found_affinity: &'static str,
        /// Its declared type in the schema.
        declared: String,
        /// Its affinity in the schema.
        declared_affinity: &'static str,
    },
    /// The table's primary key is on other columns than the schema's.
    #[error("table {table}: primary key ({found}), the schema declares ({declared})")]
    PrimaryKey {
        /// The table.
        table: String,
        /// The database's primary key columns, comma-separated.
        found: String,
        /// The schema's.
        declared: String,
    },
    /// A column the schema does not know, NOT NULL without a default: no
    /// insert of the file can fill it.
    #[error(
        "table {table}: column {column} is NOT NULL without a default and not in the schema, \
         so no insert of the file can fill it"
    )]
    RequiredColumn {
        /// The table.
        table: String,
        /// The column.
        column: String,
    },
    /// A statement SQLite cannot prepare on the database.
    #[error("`{block}` (line {line}) cannot be prepared on this database: {reason}")]
    Statement {
        /// The block's name (`ingest.s3`).
        block: String,
        /// Its `-- name:` line.
        line: usize,
        /// SQLite's message.
        reason: String,
    },
    /// A statement returns other columns on the database than on the schema alone.
    #[error("`{block}` (line {line}) returns [{found}] on this database, [{declared}] on the schema alone")]
    Columns {
        /// The block's name.
        block: String,
        /// Its `-- name:` line.
        line: usize,
        /// The columns on the database, comma-separated.
        found: String,
        /// The columns on the schema alone.
        declared: String,
    },
}

/// Why the check refused the database, or could not be made.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    /// The database does not fit the file (every difference found).
    #[error(
        "its tables do not fit {file} (the schema's CREATE TABLE IF NOT EXISTS left a table \
         that was already there as it was): {}",
        list(.misfits)
    )]
    Misfit {
        /// The statement file.
        file: String,
        /// Each difference.
        misfits: Vec<Misfit>,
    },
    /// The database or the scratch one could not be inspected.
    #[error("cannot compare the database with the schema: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

fn list(misfits: &[Misfit]) -> String {
    misfits
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Checks that `conn`'s database, after `file`'s schema ran on it, fits
/// `file` (see the module's doc).
///
/// # Errors
/// [`FitError::Misfit`] with every difference; [`FitError::Sqlite`] when
/// a database cannot be inspected.
pub fn check(conn: &Connection, file: &StatementFile) -> Result<(), FitError> {
    let scratch = Connection::open_in_memory()?;
    let schema = file.blocks.iter().filter(|b| b.name == "schema");
    for b in schema {
        scratch.execute_batch(&b.sql)?;
    }
    let mut misfits = Vec::new();
    let tables: Vec<String> = scratch
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
             ORDER BY rowid",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for t in &tables {
        misfits.extend(table(t, &columns(&scratch, t)?, &columns(conn, t)?));
    }
    for b in file.blocks.iter().filter(|b| b.name != "schema") {
        let declared = match scratch.prepare(&b.sql) {
            Ok(st) => names(&st),
            // `check` refuses such a file before any target is opened.
            Err(_) => continue,
        };
        match conn.prepare(&b.sql) {
            Err(e) => misfits.push(Misfit::Statement {
                block: b.name.clone(),
                line: b.line,
                reason: message(&e),
            }),
            Ok(st) if names(&st) != declared => misfits.push(Misfit::Columns {
                block: b.name.clone(),
                line: b.line,
                found: names(&st).join(", "),
                declared: declared.join(", "),
            }),
            Ok(_) => {}
        }
    }
    if misfits.is_empty() {
        Ok(())
    } else {
        Err(FitError::Misfit {
            file: file.path.display().to_string(),
            misfits,
        })
    }
}

/// One column as `PRAGMA table_info` tells it.
struct Column {
    name: String,
    decl: String,
    required: bool,
    pk: i64,
}

fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<Column>> {
    conn.prepare(
        "SELECT name, type, \"notnull\", dflt_value IS NULL, pk FROM pragma_table_info(?1) \
         ORDER BY cid",
    )?
    .query_map([table], |r| {
        Ok(Column {
            name: r.get(0)?,
            decl: r.get(1)?,
            required: r.get::<_, bool>(2)? && r.get::<_, bool>(3)? && r.get::<_, i64>(4)? == 0,
            pk: r.get(4)?,
        })
    })?
    .collect()
}

/// The differences of one table: `declared` on the schema alone, `found`
/// on the database.
fn table(t: &str, declared: &[Column], found: &[Column]) -> Vec<Misfit> {
    let mut out = Vec::new();
    let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    for d in declared {
        let Some(f) = found.iter().find(|f| same(&f.name, &d.name)) else {
            out.push(Misfit::MissingColumn {
                table: t.into(),
                column: d.name.clone(),
            });
            continue;
        };
        if affinity(&f.decl) != affinity(&d.decl) {
            out.push(Misfit::Affinity {
                table: t.into(),
                column: d.name.clone(),
                found: f.decl.clone(),
                found_affinity: affinity(&f.decl),
                declared: d.decl.clone(),
                declared_affinity: affinity(&d.decl),
            });
        }
    }
    for f in found {
        if f.required && !declared.iter().any(|d| same(&d.name, &f.name)) {
            out.push(Misfit::RequiredColumn {
                table: t.into(),
                column: f.name.clone(),
            });
        }
    }
    let key = |cols: &[Column]| {
        let mut k: Vec<(i64, String)> = cols
            .iter()
            .filter(|c| c.pk > 0)
            .map(|c| (c.pk, c.name.to_ascii_lowercase()))
            .collect();
        k.sort();
        k.into_iter().map(|(_, n)| n).collect::<Vec<_>>()
    };
    let (kd, kf) = (key(declared), key(found));
    // A missing key column is reported above already.
    let all_there = kd.iter().all(|n| found.iter().any(|f| same(&f.name, n)));
    if kd != kf && all_there {
        out.push(Misfit::PrimaryKey {
            table: t.into(),
            found: kf.join(", "),
            declared: kd.join(", "),
        });
    }
    out
}

/// A declared type's affinity, by SQLite's rules (datatype3.html, 3.1).
fn affinity(decl: &str) -> &'static str {
    let d = decl.to_ascii_uppercase();
    if d.contains("INT") {
        "INTEGER"
    } else if ["CHAR", "CLOB", "TEXT"].iter().any(|s| d.contains(s)) {
        "TEXT"
    } else if d.contains("BLOB") || d.trim().is_empty() {
        "BLOB"
    } else if ["REAL", "FLOA", "DOUB"].iter().any(|s| d.contains(s)) {
        "REAL"
    } else {
        "NUMERIC"
    }
}

/// A statement's column names. SQLite names a bare column as its table
/// declares it, so case may differ; the bench reads columns by position,
/// and SQLite's names ignore case.
fn names(st: &rusqlite::Statement<'_>) -> Vec<String> {
    st.column_names().map(str::to_ascii_lowercase).collect()
}

fn message(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        rusqlite::Error::SqliteFailure(_, Some(msg)) => msg.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(sql: &str) -> StatementFile {
        crate::statements::parse(std::path::Path::new("t.sql"), sql).unwrap()
    }

    const FILE: &str = "-- name: schema\n\
        CREATE TABLE IF NOT EXISTS g (id TEXT PRIMARY KEY, status TEXT, n INTEGER);\n\
        -- name: export.groups\n\
        SELECT id, status, n FROM g;\n";

    fn misfits(existing: &str) -> Vec<Misfit> {
        let f = file(FILE);
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(existing).unwrap();
        conn.execute_batch(&f.blocks[0].sql).unwrap();
        match check(&conn, &f) {
            Ok(()) => Vec::new(),
            Err(FitError::Misfit { misfits, .. }) => misfits,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn the_schema_itself_fits() {
        assert_eq!(misfits(""), []);
        // Other case, another type of the same affinity, an optional extra column.
        assert_eq!(
            misfits("CREATE TABLE g (ID varchar PRIMARY KEY, Status TEXT, n INT, extra TEXT);"),
            []
        );
    }

    #[test]
    fn a_table_of_another_shape_is_named_with_each_difference() {
        let m = misfits("CREATE TABLE g (id TEXT, state TEXT, n TEXT, owner TEXT NOT NULL);");
        let text: Vec<String> = m.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "table g has no column status, which the schema declares",
                "table g: column n is \"TEXT\" (TEXT affinity), the schema declares \"INTEGER\" \
                 (INTEGER)",
                "table g: column owner is NOT NULL without a default and not in the schema, so \
                 no insert of the file can fill it",
                "table g: primary key (), the schema declares (id)",
                "`export.groups` (line 3) cannot be prepared on this database: no such column: \
                 status",
            ]
        );
    }
}
