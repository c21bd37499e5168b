-- Read by the examples that use sqlite-vec (`.read sql/require_vec0.sql`, from the
-- project's folder): without ./vec0.so it stops them with the command that
-- fetches it, where the shell's own error would say only "cannot open shared
-- object file".  Run alone, it checks that ./vec0.so is there.
.bail on
CREATE TEMP TABLE needs_vec0(found CONSTRAINT "./vec0.so is missing: run make sqlite-vec (or make examples) in the project's folder first" CHECK (found));
INSERT INTO needs_vec0 VALUES (readfile('vec0.so') IS NOT NULL);
DROP TABLE needs_vec0;
