"""cityseeker_ros/core/agents"""
