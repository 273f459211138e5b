-- Full-text search over issues and their comments (built-in text search, no extension). Twin:
-- ../sqlite/0017_search.sql.
--
-- Generated `tsvector` columns on `issue` (title, body) and `comment` (body), with GIN indexes. The text is
-- first cut into runs of letters and digits (everything else becomes a space) so that the parser makes
-- the same words as SQLite's FTS5 tokenizer (no URLs, paths, hyphenated or signed words); the `simple`
-- configuration lower-cases them and keeps every word (no stemming, no stop words). Positions are
-- stripped: search matches words, not phrases. Only the first 100,000 characters of a body are indexed,
-- as there, which also keeps a long body under the 1 MB limit of a tsvector.

alter table issue add column search_title tsvector generated always as
    (strip(to_tsvector('simple', regexp_replace(title, '[^[:alnum:]]+', ' ', 'g')))) stored;
alter table issue add column search_body tsvector generated always as
    (strip(to_tsvector('simple', regexp_replace(left(body, 100000), '[^[:alnum:]]+', ' ', 'g')))) stored;
alter table comment add column search_body tsvector generated always as
    (strip(to_tsvector('simple', regexp_replace(left(body, 100000), '[^[:alnum:]]+', ' ', 'g')))) stored;

create index issue_search_title_idx on issue using gin (search_title);
create index issue_search_body_idx on issue using gin (search_body);
create index comment_search_body_idx on comment using gin (search_body);
