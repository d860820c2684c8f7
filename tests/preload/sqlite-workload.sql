-- sqlite-workload.sql - a deterministic workload for sqlite.sh: tables, ~20k rows from recursive
-- CTEs, indexes, joins, GROUP BY, text functions, updates and deletes. Output must not depend on
-- the allocator.
PRAGMA cache_size = -8000;
CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT, city TEXT, score REAL);
CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER, amount INTEGER, note TEXT);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
INSERT INTO customer SELECT i, 'cust-' || i || '-' || substr('abcdefghijklmnopqrstuvwxyz', 1 + i % 26, 1 + i % 7),
       'city' || (i % 37), (i * 7919 % 1000) / 10.0 FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
INSERT INTO orders SELECT i, 1 + (i * 31) % 2000, (i * 104729) % 5000, printf('note %06d %s', i, hex(i * 3)) FROM n;
CREATE INDEX orders_customer ON orders(customer_id);
CREATE INDEX customer_city ON customer(city, score);
SELECT count(*), sum(amount), min(note), max(note) FROM orders;
SELECT c.city, count(*), sum(o.amount), round(avg(o.amount), 3)
  FROM orders o JOIN customer c ON c.id = o.customer_id GROUP BY c.city ORDER BY c.city;
SELECT c.name, sum(o.amount) AS total FROM customer c JOIN orders o ON o.customer_id = c.id
  GROUP BY c.id ORDER BY total DESC, c.name LIMIT 15;
SELECT upper(name), length(name), replace(name, 'cust', 'C'), instr(name, '-')
  FROM customer WHERE city = 'city5' ORDER BY score DESC, id LIMIT 10;
SELECT group_concat(id, ',') FROM (SELECT id FROM customer WHERE score > 99 ORDER BY id);
UPDATE orders SET note = note || ' updated ' || amount WHERE amount % 7 = 0;
DELETE FROM orders WHERE amount % 11 = 0;
SELECT count(*), sum(length(note)), max(length(note)) FROM orders;
CREATE TABLE words AS
  WITH RECURSIVE w(i, s) AS (SELECT 1, 'a' UNION ALL SELECT i + 1, s || char(97 + i % 26) FROM w WHERE i < 600)
  SELECT i, s FROM w;
SELECT count(*), sum(length(s)), substr(max(s), 1, 40) FROM words;
SELECT a.i, b.i FROM words a JOIN words b ON length(a.s) * 2 = length(b.s) WHERE a.i % 97 = 0 ORDER BY a.i;
SELECT city, count(DISTINCT customer_id) FROM orders JOIN customer ON customer.id = customer_id
  GROUP BY city HAVING count(*) > 500 ORDER BY 2 DESC, city LIMIT 5;
VACUUM;
PRAGMA integrity_check;
