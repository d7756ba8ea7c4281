"""Self-test of check_module_circles.py on the fixture crates in tests/fixtures/module-circles."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "check_module_circles.py")
FIXTURES = os.path.join(HERE, "fixtures", "module-circles")


def check(*args):
    run = subprocess.run(
        [sys.executable, SCRIPT, *args], capture_output=True, text=True, check=False
    )
    return run.returncode, run.stdout + run.stderr


class ModuleCircles(unittest.TestCase):
    def test_a_circle_fails_and_is_printed_as_its_chain(self):
        rc, out = check(os.path.join(FIXTURES, "circle"))
        self.assertEqual(rc, 1, out)
        self.assertIn("circle: module circle: a b c", out)
        # each step names the file and line of the use that makes it
        self.assertRegex(out, r"a \(\S+/a\.rs:1\) -> b \(\S+/b\.rs:3\) -> c \(\S+/c\.rs:3\) -> a")

    def test_parents_children_tests_comments_and_strings_are_no_circle(self):
        rc, out = check(os.path.join(FIXTURES, "acyclic"))
        self.assertEqual(rc, 0, out)
        self.assertIn("no module circles", out)

    def test_an_allowed_circle_passes_but_a_larger_one_does_not(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("# known\ncircle: a b c\n")
        try:
            rc, out = check("--allow", f.name, os.path.join(FIXTURES, "circle"))
            self.assertEqual(rc, 0, out)
            self.assertIn("known circle (allowed): a b c", out)
            with open(f.name, "w", encoding="utf-8") as g:
                g.write("circle: a b\n")
            rc, out = check("--allow", f.name, os.path.join(FIXTURES, "circle"))
            self.assertEqual(rc, 1, out)
        finally:
            os.unlink(f.name)

    def test_a_missing_module_file_is_a_clear_error(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "src"))
            with open(os.path.join(d, "src", "lib.rs"), "w", encoding="utf-8") as f:
                f.write("mod gone;\n")
            rc, out = check(d)
            self.assertNotEqual(rc, 0)
            self.assertIn("module gone declared but its file cannot be read", out)


if __name__ == "__main__":
    unittest.main()
