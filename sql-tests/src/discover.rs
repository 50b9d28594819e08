//! Finding test files and telling their formats apart.

use std::path::{Path, PathBuf};

use crate::Error;

/// How a file is parsed and how its results are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// `.slt`: the sqllogictest crate's dialect, row-wise, plain value text.
    Slt,
    /// `.test`: SQLite's corpus, value-wise, values rendered by their declared type letter.
    SqliteTest,
}

impl FileFormat {
    /// The format of a path by its extension, or None for any other file.
    pub fn of(path: &Path) -> Option<FileFormat> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("slt") => Some(FileFormat::Slt),
            Some("test") => Some(FileFormat::SqliteTest),
            _ => None,
        }
    }
}

/// The test files a path names: the file itself, or every `.slt` and `.test` file below a
/// directory, sorted so runs are reproducible.
pub fn collect_files(path: &Path) -> Result<Vec<PathBuf>, Error> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let metadata = std::fs::metadata(path).map_err(io)?;
    if !metadata.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    let mut pending = vec![path.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| Error::Io {
                path: dir.clone(),
                source,
            })?;
            let entry_path = entry.path();
            if entry_path.is_dir() {
                pending.push(entry_path);
            } else if FileFormat::of(&entry_path).is_some() {
                files.push(entry_path);
            }
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_extension() {
        assert_eq!(FileFormat::of(Path::new("a/b.slt")), Some(FileFormat::Slt));
        assert_eq!(
            FileFormat::of(Path::new("select1.test")),
            Some(FileFormat::SqliteTest)
        );
        assert_eq!(FileFormat::of(Path::new("README.md")), None);
    }
}
