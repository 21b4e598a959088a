"""cityseeker_ros: vision-language agents that walk a city to satisfy implicit human needs."""

__version__ = "0.1.0"
