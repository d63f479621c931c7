"""Intake: guards, input contract and spec validation; every report is accepted or dead-lettered."""
