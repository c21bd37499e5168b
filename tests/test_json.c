/* test_json.c - the JSON reader built on SQLite's parser. */
#include "test.h"
#include "../ext/base/file.h"
#include "../ext/base/json.h"

#include <stdlib.h>
#include <string.h>

void suite_json(void)
{
    json_doc *doc = NULL;
    char *err = NULL;

    t_case("nested members, arrays, escapes and types");
    const char *text = "{\"a\": {\"b\": [1, 2.5, \"x\\u00e9\"]}, \"t\": true, \"n\": null, \"s.k\": \"v\"}";
    if (T_CHECK(bert_json_parse(text, strlen(text), &doc, &err) == 0, "parse failed: %s", err ? err : "?")) {
        int arr = bert_json_path(doc, 0, "a.b");
        T_CHECK(bert_json_length(doc, arr) == 3, "array length %d", bert_json_length(doc, arr));
        int first = doc->nodes[arr].first_child;
        int second = doc->nodes[first].next_sibling;
        int third = doc->nodes[second].next_sibling;
        T_CHECK(bert_json_int(doc, first, -1) == 1, "first element");
        T_CHECK(bert_json_real(doc, second, 0) == 2.5, "second element");
        T_CHECK(strcmp(bert_json_str(doc, third, ""), "x\xc3\xa9") == 0, "escaped text '%s'", bert_json_str(doc, third, ""));
        T_CHECK(bert_json_bool(doc, bert_json_member(doc, 0, "t"), -1) == 1, "true");
        T_CHECK(bert_json_bool(doc, bert_json_member(doc, 0, "n"), -1) == -1, "null is no boolean");
        T_CHECK(strcmp(bert_json_str(doc, bert_json_member(doc, 0, "s.k"), ""), "v") == 0, "member name with a dot");
        T_CHECK(bert_json_member(doc, 0, "missing") == -1, "absent member");
    }
    bert_json_free(doc);
    doc = NULL;

    t_case("malformed JSON is an error, not a crash");
    const char *bad[] = {"{", "{\"a\":}", "", "[1,2", "{\"a\" 1}", "\xff\xfe"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err = NULL;
        int rc = bert_json_parse(bad[i], strlen(bad[i]), &doc, &err);
        T_CHECK(rc == -1 && doc == NULL && err != NULL, "input %zu accepted", i);
        free(err);
        bert_json_free(doc);
        doc = NULL;
    }

    t_case("a missing file is reported as missing");
    err = NULL;
    int got = bert_json_parse_file("tests/no/such/file.json", &doc, &err);
    T_CHECK(got == 0 && !doc && !err, "a missing file gave %d (%s), not 0", got, err ? err : "no message");
    free(err);

    t_case("a file that cannot be read is an error with a message naming it");
    got = bert_json_parse_file("tests", &doc, &err);
    T_CHECK(got == -1 && !doc && err && strstr(err, "tests"), "a directory gave %d (%s)", got, err ? err : "no message");
    free(err);

    t_case("reading an absent file fails with a message, and says it is absent");
    size_t len = 0;
    int missing = 0;
    err = NULL;
    char *data = bert_file_read("tests/no/such/file.json", 100, &len, &missing, &err);
    T_CHECK(!data && missing == 1 && err && strstr(err, "tests/no/such/file.json"),
            "missing=%d, message: %s", missing, err ? err : "none (which means out of memory)");
    free(data);
    free(err);
}
