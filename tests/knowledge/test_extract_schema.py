import time

from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge.index.extract.schema import extract_prisma, extract_sql
from knowledge.index.model import Column, Extract, Table

PRISMA = b"""\
datasource db {
  provider = "postgresql"
  url      = env("DATABASE_URL") // from .env
}

/// A person who can log in.
model User {
  id      Int      @id @default(autoincrement())
  email   String   @unique
  website String?  @default("https://example.com") // a URL is not a comment
  role    Role     @default(USER)
  posts   Post[]
  profile Profile?

  @@map("users")
}

model Post {
  id        Int     @id @default(autoincrement())
  title     String
  price     Decimal @db.Decimal(10, 2)
  author    User    @relation(fields: [authorId], references: [id], onDelete: Cascade)
  authorId  Int
  tags      String[]

  @@index([authorId])
}

model Profile {
  // the FK is declared before the relation field that names it
  userId Int    @unique
  bio    String
  user   User   @relation(fields: [userId], references: [id])
}

enum Role {
  USER
  ADMIN @map("admin")
}
"""


def table(extract: Extract, name: str) -> Table:
    return next(t for t in extract.tables if t.name == name)


def column(extract: Extract, table_name: str, name: str) -> Column:
    return next(c for c in table(extract, table_name).columns if c.name == name)


def refs(extract: Extract) -> dict[str, tuple[str, str]]:
    columns = [(t.name, c) for t in extract.tables for c in t.columns]
    return {f"{name}.{c.name}": c.references for name, c in columns if c.references}


def test_prisma_models_become_tables_with_lines() -> None:
    result = extract_prisma(PRISMA)
    assert result.language == "prisma"
    assert [t.name for t in result.tables] == ["User", "Post", "Profile"]
    user = table(result, "User")
    assert (user.line, user.end_line) == (7, 16)
    assert [c.name for c in user.columns] == ["id", "email", "website", "role", "posts", "profile"]
    assert column(result, "User", "email").line == 9
    assert result.lines == len(PRISMA.decode().splitlines())
    assert not result.partial


def test_prisma_column_types_keep_modifiers() -> None:
    result = extract_prisma(PRISMA)
    assert column(result, "User", "website").type == "String?"
    assert column(result, "User", "posts").type == "Post[]"
    assert column(result, "Post", "price").type == "Decimal"
    assert column(result, "Post", "tags").type == "String[]"


def test_prisma_relations_put_the_reference_on_the_scalar_field() -> None:
    result = extract_prisma(PRISMA)
    assert refs(result) == {"Post.authorId": ("User", "id"), "Profile.userId": ("User", "id")}
    # The relation field itself and the back side carry no reference.
    assert column(result, "Post", "author").references is None
    assert column(result, "User", "posts").references is None


def test_prisma_map_and_doc_comment_go_to_the_summary() -> None:
    result = extract_prisma(PRISMA)
    assert table(result, "User").summary == 'A person who can log in.; mapped to "users"'
    assert table(result, "Post").summary == ""


def test_prisma_enum_is_a_symbol() -> None:
    result = extract_prisma(PRISMA)
    (role,) = result.symbols
    assert (role.name, role.kind, role.line, role.end_line) == ("Role", "enum", 36, 39)
    assert role.signature == "enum Role { USER ADMIN }"


def test_prisma_composite_relation_and_unclosed_block() -> None:
    source = b"""model A {
  x Int
  y Int
  b B @relation(fields: [x, y], references: [p, q])
"""
    result = extract_prisma(source)
    assert refs(result) == {"A.x": ("B", "p"), "A.y": ("B", "q")}
    assert table(result, "A").end_line == 4
    assert result.partial == "unclosed model A"


def test_prisma_named_relation_native_types_composite_type_and_empty_enum() -> None:
    source = b"""\
model Post {
  id       String @id @default(dbgenerated("gen_random_uuid()")) @db.Uuid
  search   Unsupported("tsvector")?
  author   User   @relation("PostAuthor", fields: [authorId], references: [uid])
  authorId String @map("author_id") @db.Uuid
}
type Address {
  street String
}
enum Empty {}
"""
    result = extract_prisma(source)
    assert column(result, "Post", "search").type == 'Unsupported("tsvector")?'
    assert refs(result) == {"Post.authorId": ("User", "uid")}
    assert [(s.name, s.kind, s.signature) for s in result.symbols] == [
        ("Address", "type", "type Address"),
        ("Empty", "enum", "enum Empty {}"),
    ]


POSTGRES = b"""\
-- Postgres dialect
CREATE TABLE IF NOT EXISTS public."users" (
    id          BIGSERIAL PRIMARY KEY,
    "e-mail"    VARCHAR(255) NOT NULL UNIQUE,
    created_at  TIMESTAMP WITH TIME ZONE DEFAULT now(),
    CONSTRAINT users_email_check CHECK (length("e-mail") > 3, id > 0)
);

/* orders reference users
   in two ways; this comment has a ; and CREATE TABLE fake (x int) */
create table orders (
    id       serial,
    user_id  integer references users(id) on delete cascade,
    total    NUMERIC(10,2) check (total >= 0),
    tags     text[],
    note     text default 'it''s; fine',
    PRIMARY KEY (id),
    UNIQUE (user_id, total)
);

CREATE TABLE order_items (
    order_id INTEGER NOT NULL,
    sku      TEXT,
    CONSTRAINT fk_order FOREIGN KEY (order_id) REFERENCES orders (id)
);

CREATE FUNCTION touch() RETURNS trigger AS $body$
BEGIN
  CREATE TABLE not_a_table (x int);
END;
$body$ LANGUAGE plpgsql;

ALTER TABLE ONLY order_items
    ADD CONSTRAINT fk_sku FOREIGN KEY (sku) REFERENCES products (code),
    ADD COLUMN shipped_by INTEGER REFERENCES users;

COMMENT ON TABLE orders IS 'What people bought';

CREATE TYPE "Role" AS ENUM ('USER', 'ADMIN');
"""


def test_sql_postgres_tables_columns_and_types() -> None:
    result = extract_sql(POSTGRES)
    assert result.language == "sql"
    assert [t.name for t in result.tables] == ["users", "orders", "order_items"]
    users = table(result, "users")
    assert (users.line, users.end_line) == (2, 7)
    assert users.summary == "public.users"
    assert [(c.name, c.type, c.line) for c in users.columns] == [
        ("id", "BIGSERIAL", 3),
        ("e-mail", "VARCHAR(255)", 4),
        ("created_at", "TIMESTAMP WITH TIME ZONE", 5),
    ]
    orders = table(result, "orders")
    assert [(c.name, c.type) for c in orders.columns] == [
        ("id", "serial"),
        ("user_id", "integer"),
        ("total", "NUMERIC(10,2)"),
        ("tags", "text[]"),
        ("note", "text"),
    ]
    assert orders.line == 11
    assert orders.summary == "What people bought"


def test_sql_postgres_foreign_keys_inline_table_level_and_altered() -> None:
    result = extract_sql(POSTGRES)
    assert refs(result) == {
        "orders.user_id": ("users", "id"),
        "order_items.order_id": ("orders", "id"),
        "order_items.sku": ("products", "code"),
        # no column named: the referenced table's primary key
        "order_items.shipped_by": ("users", "id"),
    }
    assert column(result, "order_items", "shipped_by").line == 35


def test_sql_dollar_quoted_bodies_and_comments_are_not_tables() -> None:
    names = {t.name for t in extract_sql(POSTGRES).tables}
    assert "not_a_table" not in names
    assert "fake" not in names


def test_sql_enum_type_is_a_symbol() -> None:
    (role,) = extract_sql(POSTGRES).symbols
    assert (role.name, role.kind, role.line) == ("Role", "enum", 39)
    assert role.signature == "enum Role { USER ADMIN }"


SQLITE = b"""\
CREATE TABLE `authors` (`id` INTEGER PRIMARY KEY AUTOINCREMENT, `name` TEXT);
CREATE TABLE [books] (
  [id] INTEGER PRIMARY KEY,
  [author_id] INTEGER NOT NULL REFERENCES [authors]([id]),
  key VARCHAR(20),
  price REAL,
  untyped,
  FOREIGN KEY (price) REFERENCES prices
) WITHOUT ROWID;
CREATE VIRTUAL TABLE books_fts USING fts5(title, body);
CREATE TEMP TABLE scratch AS SELECT 1;
"""


def test_sql_sqlite_quoting_and_untyped_columns() -> None:
    result = extract_sql(SQLITE)
    assert [t.name for t in result.tables] == ["authors", "books", "scratch"]
    assert [(c.name, c.type) for c in table(result, "authors").columns] == [
        ("id", "INTEGER"),
        ("name", "TEXT"),
    ]
    books = table(result, "books")
    assert (books.line, books.end_line) == (2, 9)
    assert [(c.name, c.type) for c in books.columns] == [
        ("id", "INTEGER"),
        ("author_id", "INTEGER"),
        ("key", "VARCHAR(20)"),
        ("price", "REAL"),
        ("untyped", ""),
    ]
    # prices is not defined in this file, so its primary key is unknown
    assert refs(result) == {"books.author_id": ("authors", "id"), "books.price": ("prices", "")}


def test_sql_prisma_migration_alter_on_table_from_another_file() -> None:
    source = (
        b'ALTER TABLE "Post" ADD CONSTRAINT "Post_authorId_fkey" FOREIGN KEY ("authorId") '
        b'REFERENCES "User"("id") ON DELETE RESTRICT ON UPDATE CASCADE;\n'
    )
    result = extract_sql(source)
    assert refs(result) == {"Post.authorId": ("User", "id")}
    assert (result.tables[0].line, result.tables[0].columns[0].line) == (1, 1)


def test_sql_mysql_index_lines_are_not_columns() -> None:
    source = b"CREATE TABLE t (a INT, KEY idx_a (a), INDEX (a), UNIQUE KEY u (a));"
    assert [c.name for c in extract_sql(source).tables[0].columns] == ["a"]


PG_DUMP = b"""\
CREATE TABLE public.users (id integer NOT NULL);
CREATE TABLE public.notes (id integer, user_id integer, body text);
COPY public.notes (id, user_id, body) FROM stdin;
1\t1\tdon't; CREATE TABLE fake (x int);
2\t1\tunbalanced ' quote
\\.
ALTER TABLE ONLY public.users OWNER TO app;
ALTER TABLE ONLY public.notes
    ADD CONSTRAINT notes_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id);
"""


def test_sql_pg_dump_copy_rows_are_skipped() -> None:
    result = extract_sql(PG_DUMP)
    assert [t.name for t in result.tables] == ["users", "notes"]
    assert refs(result) == {"notes.user_id": ("users", "id")}
    assert column(result, "notes", "user_id").line == 2


TSQL = b"""\
CREATE TABLE [dbo].[Customers] (
    [Id] INT IDENTITY(1,1) NOT NULL,
    CONSTRAINT [PK_Customers] PRIMARY KEY CLUSTERED ([Id] ASC)
)
GO
CREATE TABLE [dbo].[Invoices] ([Id] INT NOT NULL, [CustomerId] INT NULL)
GO
ALTER TABLE [dbo].[Invoices] WITH CHECK ADD CONSTRAINT [FK_Inv_Cust]
    FOREIGN KEY([CustomerId]) REFERENCES [dbo].[Customers] ([Id])
GO
"""


def test_sql_tsql_go_batches_without_semicolons() -> None:
    result = extract_sql(TSQL)
    assert [t.name for t in result.tables] == ["Customers", "Invoices"]
    assert table(result, "Customers").end_line == 4
    assert column(result, "Customers", "Id").type == "INT"
    assert refs(result) == {"Invoices.CustomerId": ("Customers", "Id")}


def test_sql_mysql_dump_backslash_escapes_do_not_desynchronise() -> None:
    source = b"""\
CREATE TABLE `a` (`id` int(11) NOT NULL AUTO_INCREMENT, PRIMARY KEY (`id`)) ENGINE=InnoDB;
INSERT INTO `a` VALUES (1,'it\\'s'),(2,'back\\\\');
CREATE TABLE `b` (`a_id` int(11) DEFAULT NULL, KEY `k` (`a_id`),
  CONSTRAINT `fk` FOREIGN KEY (`a_id`) REFERENCES `a` (`id`));
"""
    result = extract_sql(source)
    assert [t.name for t in result.tables] == ["a", "b"]
    assert column(result, "a", "id").type == "int(11)"
    assert refs(result) == {"b.a_id": ("a", "id")}


def test_sql_large_pathological_input_stays_fast() -> None:
    payloads = [
        b"CREATE TABLE t (" + b"(" * 50_000,
        b"'" + b"''" * 200_000,
        b"/*" + b"*" * 400_000,
        b"$a$ " * 100_000,
        b"CREATE TABLE t (" + b"x INT, FOREIGN KEY (x) REFERENCES y(z), " * 5_000 + b");",
        b"CREATE TABLE t (FOREIGN KEY (" + b"a, " * 30_000 + b") REFERENCES u);",
        b"CREATE TABLE t (x INT " + b"REFERENCES a (" * 20_000,
        b"ALTER TABLE t ADD x INT " + b"CHECK (" * 20_000,
    ]
    for payload in payloads:
        start = time.perf_counter()
        extract_sql(payload)
        assert time.perf_counter() - start < 5, payload[:40]


def test_prisma_large_input_stays_fast() -> None:
    payload = b"model M {\n" + b'  f String @default("//") // c\n' * 30_000 + b"}\n"
    start = time.perf_counter()
    result = extract_prisma(payload)
    assert time.perf_counter() - start < 5
    assert len(result.tables[0].columns) == 30_000


SQL_WORDS = st.sampled_from(
    [
        "CREATE", "TABLE", "ALTER", "ADD", "CONSTRAINT", "FOREIGN", "KEY", "PRIMARY", "REFERENCES",
        "IF", "NOT", "EXISTS", "COMMENT", "ON", "IS", "TYPE", "AS", "ENUM", "USING", "x", "y",
        "(", ")", ",", ";", ".", "'", '"', "`", "[", "]", "$$", "$t$", "--", "/*", "*/", "\n",
        "INT", "NUMERIC(10,2)", "KEY", "INDEX", "UNIQUE", "CHECK", "COLUMN",
    ]
)  # fmt: skip
PRISMA_WORDS = st.sampled_from(
    [
        "model", "enum", "type", "view", "X", "{", "}", "\n", "@relation(", "fields:", "[", "]",
        "references:", "a", "b", ",", ")", "@@map(", '"', "//", "///", "?", "Int", "@id", " ",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    assert isinstance(extract_sql(data), Extract)
    assert isinstance(extract_prisma(data), Extract)


@settings(max_examples=300, deadline=None)
@given(st.lists(SQL_WORDS, max_size=60))
def test_sql_token_soup_never_raises(words: list[str]) -> None:
    result = extract_sql(" ".join(words).encode())
    for t in result.tables:
        assert t.line >= 1 and t.end_line >= t.line


@settings(max_examples=300, deadline=None)
@given(st.lists(PRISMA_WORDS, max_size=60))
def test_prisma_token_soup_never_raises(words: list[str]) -> None:
    result = extract_prisma(" ".join(words).encode())
    for t in result.tables:
        assert 1 <= t.line <= t.end_line
