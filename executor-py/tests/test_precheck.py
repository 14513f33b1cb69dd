"""Unit tests of blockx_executor.precheck: diagnostics from ast/compile only, nothing run."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

from blockx_executor.precheck import check

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def codes(diagnostics):
    return [(d["severity"], d["code"], d["line"], d["column"]) for d in diagnostics]


class PrecheckTest(unittest.TestCase):
    def test_a_good_function_has_no_diagnostics(self):
        self.assertEqual(check("def main(ctx, input):\n    return 1\n", "main", "<t>"), [])
        self.assertEqual(check("async def main(ctx, input):\n    return await ctx.io('a', 'b')\n", "main", "<t>"), [])
        self.assertEqual(check("def main(ctx, input, extra=1, *rest, flag=False, **kw):\n    pass\n", "main", "<t>"), [])
        self.assertEqual(check("def main(*args):\n    pass\n", "main", "<t>"), [])

    def test_syntax_error_has_line_and_column(self):
        [d] = check("def main(ctx, input)\n    return 1\n", "main", "<t>")
        self.assertEqual((d["severity"], d["code"], d["line"], d["column"]), ("error", "SYNTAX_ERROR", 1, 21))
        self.assertIn("line 1, column 21", d["message"])

    def test_nul_byte_and_absurd_nesting_are_syntax_errors_not_crashes(self):
        self.assertEqual(check("x = 1\0\n", "main", "<t>")[0]["code"], "SYNTAX_ERROR")
        self.assertEqual(check("x = " + "(" * 100_000 + ")" * 100_000, "main", "<t>")[0]["code"], "SYNTAX_ERROR")

    def test_compiler_errors_come_with_the_entry_checks(self):
        found = codes(check("def main(ctx):\n    pass\nreturn 1\n", "main", "<t>"))
        self.assertIn(("error", "SYNTAX_ERROR", 3, 1), found)
        self.assertIn(("error", "BAD_SIGNATURE", 1, 1), found)

    def test_missing_entry_names_the_functions_defined(self):
        [d] = check("def mian(ctx, input):\n    pass\n", "main", "<t>")
        self.assertEqual(d["code"], "ENTRY_NOT_FOUND")
        self.assertIn("mian", d["message"])

    def test_signature_rules_match_the_executor_calling_convention(self):
        self.assertEqual(codes(check("def main():\n    pass\n", "main", "<t>")), [("error", "BAD_SIGNATURE", 1, 1)])
        self.assertEqual(codes(check("def main(a, b, c):\n    pass\n", "main", "<t>")), [("error", "BAD_SIGNATURE", 1, 1)])
        self.assertEqual(codes(check("def main(a, b, *, k):\n    pass\n", "main", "<t>")), [("error", "BAD_SIGNATURE", 1, 1)])
        self.assertEqual(check("def main(a, b, c=3, *, k=1):\n    pass\n", "main", "<t>"), [])

    def test_entry_bound_otherwise_is_a_warning(self):
        self.assertEqual(codes(check("main = lambda c, i: 1\n", "main", "<t>")), [("warning", "ENTRY_NOT_CHECKED", 1, 1)])
        self.assertEqual(codes(check("from os.path import join as main\n", "main", "<t>")), [("warning", "ENTRY_NOT_CHECKED", 1, 1)])
        self.assertEqual(codes(check("class main:\n    pass\n", "main", "<t>")), [("warning", "ENTRY_NOT_A_FUNCTION", 1, 1)])
        found = codes(check("import functools\n@functools.lru_cache\ndef main(ctx):\n    pass\n", "main", "<t>"))
        self.assertEqual(found, [("warning", "BAD_SIGNATURE", 3, 1), ("warning", "ENTRY_DECORATED", 3, 1)])

    def test_redefinition_and_conditional_definitions(self):
        src = "def main(ctx, input):\n    pass\nif True:\n    def main(ctx, input):\n        pass\n"
        self.assertEqual(codes(check(src, "main", "<t>")), [("warning", "MODULE_LEVEL_CODE", 3, 1), ("warning", "ENTRY_REDEFINED", 1, 1)])

    def test_async_entry_awaiting_something_else(self):
        src = "import asyncio\nasync def main(ctx, input):\n    await asyncio.sleep(0)\n    async with x:\n        pass\n    await ctx.log('ok')\n"
        found = codes(check(src, "main", "<t>"))
        self.assertEqual(found, [("warning", "ASYNC_AWAIT_NON_CTX", 3, 5), ("warning", "ASYNC_AWAIT_NON_CTX", 4, 5)])

    def test_the_process_runs_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            target = os.path.join(d, "ran")
            source = f"open({target!r}, 'w').write('x')\nimport os\nos._exit(9)\ndef main(ctx, input):\n    pass\n"
            request = json.dumps({"source": source, "entry": "main", "filename": "<t>"})
            out = subprocess.run(
                [sys.executable, "-m", "blockx_executor.precheck"],
                input=request.encode(),
                capture_output=True,
                cwd=d,
                env={"PYTHONPATH": PACKAGE_ROOT, "PYTHONDONTWRITEBYTECODE": "1"},
                check=True,
            )
            answer = json.loads(out.stdout)
            self.assertEqual([c["code"] for c in answer["diagnostics"]], ["MODULE_LEVEL_CODE", "MODULE_LEVEL_CODE"])
            self.assertFalse(os.path.exists(target))


if __name__ == "__main__":
    unittest.main()
