-- cloud_drive.sql: a cloud drive's directories and files.
--
-- Run: rowdex --memory --format table -f examples/sql/cloud_drive.sql
--
-- Row-key design (the row key is the PRIMARY KEY, stored sorted):
--
--   dirs   keyed by the directory's full path, '/home/ann/photos/2025'.
--          Sorted by path, a directory's whole subtree is one contiguous key range:
--          every key that starts with '/home/ann/'. The trailing '/' makes the prefix
--          safe: '/home/anna' sorts outside [ '/home/ann/', '/home/ann0' ) because '0'
--          is the byte after '/'. A short numeric dir_id (UNIQUE, so it has its own index)
--          is what other tables point at: a path can be long and can change on a rename,
--          the id is 8 bytes and stable.
--
--   files  keyed by (dir_id, name). Listing a folder is a prefix scan on dir_id, already in
--          name order, and "one file" is a point get. The key is unique (one name per folder),
--          and BIGINT encodes at a fixed width, so dir 1 never matches the files of dir 12.
--
--          A file's content (here a 2 KB preview) is in column family `data`: stored under
--          a key of its own, so listing a folder, which reads names, sizes and times, never
--          reads a byte of content (EXPLAIN says families=[default]).
--
--   "Files modified between two times" is a different query direction: the primary key
--   cannot answer it, so a secondary index on modified does (an index entry is
--   modified || primary key, so it needs no extra uniqueness). INCLUDE (size) puts size in
--   the entry, making the index covering for a query that reads only the key columns,
--   modified and size.

CREATE TABLE dirs (
    path    TEXT PRIMARY KEY,           -- full path, no trailing slash ('/' for the root)
    dir_id  BIGINT NOT NULL UNIQUE,     -- the short id files point at (index dirs_dir_id_key)
    owner   TEXT NOT NULL,
    depth   INT NOT NULL                -- number of path components: '/home/ann' is 2
);

CREATE TABLE files (
    dir_id    BIGINT,
    name      TEXT,
    size      BIGINT NOT NULL,
    modified  TIMESTAMP NOT NULL,
    mime      TEXT NOT NULL,
    data.preview TEXT,                  -- column family `data`: read only when asked for
    PRIMARY KEY (dir_id, name)
);

CREATE INDEX files_by_modified ON files (modified) INCLUDE (size);

-- Data: 12 users, 7 directories each under /home/<user>, 40 files in each of the
-- 6 subdirectories (2880 files). 'ann', 'anna' and 'ann_b' are there on purpose: their
-- paths share the prefix '/home/ann'.
INSERT INTO dirs VALUES ('/', 1, 'root', 0), ('/home', 2, 'root', 1);

INSERT INTO dirs
WITH users(uid, name) AS (
    VALUES (1, 'ann'), (2, 'anna'), (3, 'ann_b'), (4, 'bob'), (5, 'carol'), (6, 'dave'),
           (7, 'erin'), (8, 'frank'), (9, 'grace'), (10, 'heidi'), (11, 'ivan'), (12, 'judy')
), subdirs(sid, rel, d) AS (
    VALUES (0, '', 2), (1, '/docs', 3), (2, '/docs/tax', 4), (3, '/music', 3),
           (4, '/photos', 3), (5, '/photos/2024', 4), (6, '/photos/2025', 4)
)
SELECT '/home/' || u.name || s.rel, 100 + u.uid * 10 + s.sid, u.name, s.d
FROM users u CROSS JOIN subdirs s;

INSERT INTO files
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40)
SELECT d.dir_id,
       CASE d.dir_id % 10 WHEN 1 THEN 'notes-' WHEN 2 THEN 'receipt-' WHEN 3 THEN 'track-'
                          ELSE 'photo-' END
           || lpad(CAST(n.i AS TEXT), 4, '0')
           || CASE d.dir_id % 10 WHEN 1 THEN '.txt' WHEN 2 THEN '.pdf' WHEN 3 THEN '.mp3'
                                 ELSE '.jpg' END,
       (d.dir_id * 7919 + n.i * 104729) % 5000000,
       to_timestamp_seconds(1735689600 + (d.dir_id * 48271 + n.i * 1000003) % 31536000),
       CASE d.dir_id % 10 WHEN 1 THEN 'text/plain' WHEN 2 THEN 'application/pdf'
                          WHEN 3 THEN 'audio/mpeg' ELSE 'image/jpeg' END,
       repeat('preview of file ' || CAST(n.i AS TEXT) || '. ', 100)
FROM dirs d CROSS JOIN n
WHERE d.depth >= 3;

SELECT count(*) AS dirs FROM dirs;
SELECT count(*) AS files FROM files;

-- 1. One directory by path: every key column fixed, a point get.
EXPLAIN SELECT * FROM dirs WHERE path = '/home/ann/photos';
-- expect: POINT GET dirs key (path = '/home/ann/photos')
SELECT * FROM dirs WHERE path = '/home/ann/photos';

-- 2. The subtree of /home/ann: one key range. Neither 'anna' nor 'ann_b' is in it.
EXPLAIN SELECT path, dir_id FROM dirs WHERE path >= '/home/ann/' AND path < '/home/ann0';
-- expect: RANGE SCAN dirs range [path >= '/home/ann/' AND path < '/home/ann0']
SELECT path, dir_id FROM dirs WHERE path >= '/home/ann/' AND path < '/home/ann0';

--    LIKE 'prefix%' is turned into the same range. But '_' is a LIKE wildcard (any one
--    character): '/home/ann_b/%' reads the range of its literal start, '/home/ann', and
--    checks the pattern on each row read, which also lets '/home/annXb/' through the
--    pattern. An escaped '\_' is left to DataFusion: a FULL SCAN. Paths may contain '_', so
--    an application that wants exactly one subtree builds the bounds itself.
EXPLAIN SELECT path, dir_id FROM dirs WHERE path LIKE '/home/ann/%';
-- expect: RANGE SCAN dirs range [path LIKE '/home/ann/%']
EXPLAIN SELECT path, dir_id FROM dirs WHERE path LIKE '/home/ann_b/%';
-- expect: RANGE SCAN dirs range [path LIKE '/home/ann%'] residual=(path LIKE '/home/ann_b/%')
EXPLAIN SELECT path, dir_id FROM dirs WHERE path LIKE '/home/ann\_b/%';
-- expect: FULL SCAN dirs
EXPLAIN SELECT path, dir_id FROM dirs WHERE path >= '/home/ann_b/' AND path < '/home/ann_b0';
-- expect: RANGE SCAN dirs range [path >= '/home/ann_b/' AND path < '/home/ann_b0']
SELECT path, dir_id FROM dirs WHERE path >= '/home/ann_b/' AND path < '/home/ann_b0';

--    Without the trailing '/' the prefix is not safe: it matches /home/anna and /home/ann_b too.
SELECT path FROM dirs WHERE path LIKE '/home/ann%' AND depth = 2;

-- 3. The direct children of /home/ann: the subtree range, with depth checked on each row
--    read (a residual). The subtree of a deep tree can be large; a key (parent_path, name)
--    would read only the children, at the price of no subtree scan.
EXPLAIN SELECT path FROM dirs WHERE path LIKE '/home/ann/%' AND depth = 3;
-- expect: RANGE SCAN dirs range [path LIKE '/home/ann/%'] residual=(depth = 3)
SELECT path FROM dirs WHERE path LIKE '/home/ann/%' AND depth = 3;

-- 4. Listing a folder: path -> dir_id (the point get of 1: /home/ann/photos is 114),
--    then a prefix scan of files on dir_id, already in name order: no sort.
EXPLAIN SELECT name, size, modified FROM files WHERE dir_id = 114 ORDER BY name LIMIT 10;
-- expect: RANGE SCAN files range [dir_id = 114] families=[default] limit=10
SELECT name, size, modified FROM files WHERE dir_id = 114 ORDER BY name LIMIT 10;

--    The next page starts after the last name shown: the range begins at that key.
EXPLAIN SELECT name, size FROM files WHERE dir_id = 114 AND name > 'photo-0010.jpg'
ORDER BY name LIMIT 10;
-- expect: RANGE SCAN files range [dir_id = 114, name > 'photo-0010.jpg'] families=[default] limit=10
SELECT name, size FROM files WHERE dir_id = 114 AND name > 'photo-0010.jpg'
ORDER BY name LIMIT 10;

--    Files of one folder whose names start with 'photo-002': the name range inside the prefix.
EXPLAIN SELECT name FROM files WHERE dir_id = 114 AND name LIKE 'photo-002%';
-- expect: RANGE SCAN files range [dir_id = 114, name LIKE 'photo-002%'] families=[default]

-- 5. One file: (dir_id, name), a point get.
EXPLAIN SELECT dir_id, name, size, modified, mime FROM files WHERE dir_id = 114 AND name = 'photo-0007.jpg';
-- expect: POINT GET files key (dir_id = 114, name = 'photo-0007.jpg') families=[default]
SELECT dir_id, name, size, modified, mime FROM files WHERE dir_id = 114 AND name = 'photo-0007.jpg';

-- 6. dir_id -> path (say, to print where a file lives): the UNIQUE index on dir_id.
EXPLAIN SELECT path FROM dirs WHERE dir_id = 114;
-- expect: INDEX SCAN dirs using dirs_dir_id_key [dir_id = 114] covering
SELECT path FROM dirs WHERE dir_id = 114;

-- 7. Files modified in a time range, across every folder: the secondary index. It holds
--    modified, the key (dir_id, name) and the INCLUDEd size: covering, no row lookups.
EXPLAIN SELECT dir_id, name, size, modified FROM files
WHERE modified >= TIMESTAMP '2025-03-01 00:00:00' AND modified < TIMESTAMP '2025-03-02 00:00:00';
-- expect: INDEX SCAN files using files_by_modified [modified >= TIMESTAMP '2025-03-01 00:00:00' AND modified < TIMESTAMP '2025-03-02 00:00:00'] covering
SELECT dir_id, name, size, modified FROM files
WHERE modified >= TIMESTAMP '2025-03-01 00:00:00' AND modified < TIMESTAMP '2025-03-02 00:00:00'
ORDER BY modified;

--    The 5 most recently modified files: the index read backwards, stopped after 5 entries.
EXPLAIN SELECT dir_id, name, modified FROM files ORDER BY modified DESC LIMIT 5;
-- expect: INDEX SCAN files using files_by_modified [all] covering reverse limit=5
SELECT dir_id, name, modified FROM files ORDER BY modified DESC LIMIT 5;

--    Reading a column the index does not hold (mime) costs one row lookup per entry:
--    the plan no longer says covering.
EXPLAIN SELECT name, mime FROM files
WHERE modified >= TIMESTAMP '2025-03-01 00:00:00' AND modified < TIMESTAMP '2025-03-02 00:00:00';
-- expect: INDEX SCAN files using files_by_modified [modified >= TIMESTAMP '2025-03-01 00:00:00' AND modified < TIMESTAMP '2025-03-02 00:00:00'] families=[default]

--    One folder in a time range: the folder's prefix is short, so the key range with the
--    time checked per row beats reading the index (the planner counts both).
EXPLAIN SELECT name, modified FROM files WHERE dir_id = 114
AND modified >= TIMESTAMP '2025-03-01 00:00:00' AND modified < TIMESTAMP '2025-06-01 00:00:00';
-- expect: RANGE SCAN files range [dir_id = 114] families=[default] residual=(modified >= TIMESTAMP '2025-03-01 00:00:00' AND modified < TIMESTAMP '2025-06-01 00:00:00')

-- 8. A file's preview: the only query that reads family `data`, one more entry per file.
EXPLAIN SELECT name, length(preview) FROM files WHERE dir_id = 114 AND name = 'photo-0007.jpg';
-- expect: POINT GET files key (dir_id = 114, name = 'photo-0007.jpg') families=[data]
SELECT name, length(preview) FROM files WHERE dir_id = 114 AND name = 'photo-0007.jpg';

-- 9. The folder listing as one statement, a join: the directory by its path (a point get),
--    then its files by the key prefix dir_id (a lookup join), the two steps of 4 in one.
EXPLAIN SELECT f.name, f.size FROM dirs d JOIN files f ON f.dir_id = d.dir_id
WHERE d.path = '/home/ann/photos';
-- expect: POINT GET dirs key (path = '/home/ann/photos')
-- expect: LOOKUP JOIN files using primary key [dir_id = dir_id]
SELECT f.name, f.size FROM dirs d JOIN files f ON f.dir_id = d.dir_id
WHERE d.path = '/home/ann/photos' ORDER BY f.name LIMIT 3;

-- Total size per user, from the subtree of /home (DataFusion's aggregate over the range).
SELECT d.owner, count(*) AS files, sum(f.size) AS bytes
FROM dirs d JOIN files f ON f.dir_id = d.dir_id
WHERE d.path LIKE '/home/%'
GROUP BY d.owner ORDER BY bytes DESC LIMIT 5;
