"""SyntaxGym test suites: reading, prediction formulas, region surprisals and evaluation."""
