"""Spark inside a TaskExecutor: one local-mode SparkSession per executor process."""
