"""The verdicts of the claims ledger, in the order every count shows them: the one list of their names, which the
claims (that judge), the results (whose audit counts a ledger's), the figures and the report import."""

PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
VERDICTS = (PASS, FAIL, INCONCLUSIVE)
